#!/usr/bin/env bash
# deploy.sh's logic (update, wait, look twice LOOK_DELAY_S apart, judge by RULE, roll back
# on a failure) with a choice of what an API error means, for the API's own faults (a
# scenario's [api] table: docs/twin.md, "The API's own faults"):
#
#   ON_API_ERROR=exit     as deploy.sh: any non-2xx answer or a cut connection, exit 2
#   ON_API_ERROR=healthy  the naive step: an answer that is not 2xx (a 503, a 429, a reset)
#                         is taken as "all is well": a look that fails judges live
#   ON_API_ERROR=retry    a 5xx, a 429 (after its Retry-After), a cut connection or a
#                         wait's 408 is asked again, API_TRIES times in all (default 6),
#                         1, 2, 4, 8 s apart; then as exit
#
# Everything else as deploy.sh (its header says what each variable means); timestamp-lax.sh
# and timestamp-retry.sh are this with RULE=timestamp.
set -euo pipefail

: "${RULE:?RULE must be timestamp or count}" "${FLY_API_HOSTNAME:?}" "${FLY_API_TOKEN:?}"
: "${FLY_APP_NAME:?}"
STEP="${STEP:-$([[ -n ${FLY_IMAGE_REF:-} ]] && echo deploy || echo check)}"
LOOK_DELAY_S="${LOOK_DELAY_S:-10}"
WAIT_TIMEOUT_S="${WAIT_TIMEOUT_S:-60}"
ON_API_ERROR="${ON_API_ERROR:-exit}"
API_TRIES="${API_TRIES:-6}"
case "$RULE" in timestamp|count) ;; *) echo "RULE must be timestamp or count" >&2; exit 2 ;; esac
case "$STEP" in deploy) : "${FLY_IMAGE_REF:?STEP=deploy needs FLY_IMAGE_REF}" ;; check) ;;
  *) echo "STEP must be deploy or check" >&2; exit 2 ;; esac
case "$ON_API_ERROR" in exit|healthy|retry) ;;
  *) echo "ON_API_ERROR must be exit, healthy or retry" >&2; exit 2 ;; esac
[[ $API_TRIES =~ ^[1-9][0-9]?$ ]] || { echo "API_TRIES must be 1 to 99" >&2; exit 2; }
BASE="$FLY_API_HOSTNAME/v1/apps/$FLY_APP_NAME"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

once() {  # once METHOD PATH [BODY]: sets $status (000: no answer) and $out, $retry_after
  local method=$1 path=$2 body=${3:-} got
  got=$(curl -sS -X "$method" -H "Authorization: Bearer $FLY_API_TOKEN" \
        -H 'Content-Type: application/json' ${body:+--data "$body"} -D "$tmp/headers" \
        -w '\n%{http_code}' "$BASE$path" 2>/dev/null) || got=$'\n000'
  status=${got##*$'\n'}
  out=${got%$'\n'*}
  retry_after=$(tr -d '\r' <"$tmp/headers" 2>/dev/null | awk -F': *' 'tolower($1) == "retry-after" {print $2}')
  : >"$tmp/headers"
}

api() {  # api METHOD PATH [BODY]: the JSON body on stdout; an error as ON_API_ERROR says
  local method=$1 path=$2 body=${3:-} try=1 pause=1
  once "$method" "$path" "$body"
  if [[ $ON_API_ERROR == retry ]]; then
    while (( try < API_TRIES )) && [[ $status == 000 || $status == 5* || $status == 429 \
                                      || ( $status == 408 && $path == */wait* ) ]]; do
      local wait_s=$pause
      [[ $status == 429 && $retry_after =~ ^[0-9]+$ ]] && wait_s=$retry_after
      echo "$method $path -> $status: again in ${wait_s}s" >&2
      sleep "$wait_s"
      (( try += 1, pause = pause < 8 ? pause * 2 : 8 ))
      once "$method" "$path" "$body"
    done
  fi
  if [[ $status != 2* ]]; then
    echo "$method $path -> $status $(jq -r '.error // .' <<<"$out" 2>/dev/null)" >&2
    [[ $ON_API_ERROR == healthy ]] && return 3  # "the API is fine": the caller reads it so
    [[ $status == 000 ]] && exit 2
    return 1
  fi
  printf '%s\n' "$out"
}

healthy_if_lax() {  # after a look that failed: live when errors are taken as healthy, else exit 2
  if [[ $ON_API_ERROR == healthy ]]; then
    echo "$RULE: the API did not answer the look: taken as healthy (live)"
    exit 0
  fi
  exit 2
}

update_all() {  # update_all IMAGE: every machine to IMAGE, then wait until each is started
  local image=$1 id version
  for id in $ids; do
    version=$(api POST "/machines/$id" "$(jq -nc --arg i "$image" '{config: {image: $i}}')" \
              | tee "$tmp/update-$id.json" | jq -r '.instance_id // empty') \
      || [[ $ON_API_ERROR == healthy ]] || exit 2
    api GET "/machines/$id/wait?state=started&timeout=$WAIT_TIMEOUT_S&instance_id=$version" \
        >/dev/null || echo "machine $id did not reach started within ${WAIT_TIMEOUT_S}s" >&2
  done
}

CRASHES='[.events[]? | select(.type == "exit" and .timestamp >= $p
          and (.request.exit_event.requested_stop | not)
          and ((.request.exit_event.exit_code // 0) != 0 or .request.exit_event.oom_killed))]'

judge() {  # judge LOOK2 LOOK3: "failed REASON" or "live REASON" (deploy.sh's)
  if [[ $RULE == count ]]; then
    jq -rn --argjson p "$publish_ms" --slurpfile a "$1" --slurpfile b "$2" "
      [\$a[0][] | $CRASHES | length] as \$before | [\$b[0][] | $CRASHES | length] as \$after
      | if ([\$before, \$after] | transpose | any(.[1] > .[0]))
        then \"failed crashes since the publish rose: \(\$before) -> \(\$after)\"
        else \"live crashes since the publish did not rise: \(\$after)\" end"
  else
    jq -rn --argjson p "$publish_ms" --slurpfile a "$1" --slurpfile b "$2" "
      [\$a[0][] | $CRASHES | map(.timestamp) | max] as \$before
      | [\$b[0][] | $CRASHES | map(.timestamp) | max] as \$after
      | if ([\$before, \$after] | transpose | any(.[1] != null and (.[0] == null or .[1] > .[0])))
        then \"failed a crash newer than look 2's: \(\$before) -> \(\$after)\"
        else \"live no crash newer than look 2's\" end"
  fi
}

api GET /machines >"$tmp/before.json" || healthy_if_lax
ids=$(jq -r '.[].id' "$tmp/before.json")
previous=$(jq -r '[.[].config.image // empty][0] // empty' "$tmp/before.json")

if [[ $STEP == deploy ]]; then
  update_all "$FLY_IMAGE_REF"
  publish_ms=$(jq -s '[.[].events[]?.timestamp] | max // 0' "$tmp"/update-*.json)
else
  publish_ms=$(jq '[.[].events[]? | select(.type == "launch" or .type == "update") | .timestamp] | max' \
               "$tmp/before.json")
  for id in $ids; do
    version=$(jq -r --arg id "$id" '.[] | select(.id == $id) | .instance_id' "$tmp/before.json")
    api GET "/machines/$id/wait?state=started&timeout=$WAIT_TIMEOUT_S&instance_id=$version" \
        >/dev/null || echo "machine $id did not reach started within ${WAIT_TIMEOUT_S}s" >&2
  done
fi

verdict=""
sleep "$LOOK_DELAY_S"
api GET /machines >"$tmp/look2.json" || healthy_if_lax
if down=$(jq -r '.[] | select(.state != "started") | .id' "$tmp/look2.json") && [[ -n $down ]]; then
  verdict="failed not started at look 2: $down"
elif [[ $(jq --argjson p "$publish_ms" "[.[] | $CRASHES | length] | add" "$tmp/look2.json") == 0 ]]; then
  verdict="live started twice ${LOOK_DELAY_S}s apart with no crash since the publish"
else
  sleep "$LOOK_DELAY_S"
  api GET /machines >"$tmp/look3.json" || healthy_if_lax
  if down=$(jq -r '.[] | select(.state != "started") | .id' "$tmp/look3.json") && [[ -n $down ]]; then
    verdict="failed not started at look 3: $down"
  else
    verdict=$(judge "$tmp/look2.json" "$tmp/look3.json")
  fi
fi

echo "$RULE: ${verdict#* } (${verdict%% *})"
if [[ $verdict == failed* ]]; then
  if [[ $STEP == deploy && -n $previous && $previous != "$FLY_IMAGE_REF" ]]; then
    echo "rolling back to $previous" >&2
    update_all "$previous"
  fi
  exit 1
fi
