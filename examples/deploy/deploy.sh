#!/usr/bin/env bash
# A deploy step as one writes it against Fly's Machines API, with curl and jq:
# update every machine to FLY_IMAGE_REF, wait for it with the server-side wait, look
# twice LOOK_DELAY_S apart (a third time if a crash shows), judge by RULE, and on a
# failure roll back by updating to the previous image. Exit 0: live; 1: failed (rolled
# back); 2: a usage or API error.
#
# Without FLY_IMAGE_REF (or with STEP=check) it only judges: the platform has published
# (testbed compare --check-http), so it waits for the machines as they are, judges, and
# leaves the rollback to the pipeline.
#
#   RULE=timestamp|count  FLY_API_HOSTNAME FLY_API_TOKEN FLY_APP_NAME [FLY_IMAGE_REF]
#   STEP=deploy|check (default: deploy if FLY_IMAGE_REF is set)
#   LOOK_DELAY_S (default 10)  WAIT_TIMEOUT_S (default 60, Fly's most)
#
# The rules are the incident's check (checks/layered.py): "count" compares how many
# crashes since the publish look 2 and look 3 show; "timestamp" compares the newest
# crash's timestamp. A crash is an exit that was not asked for with a non-zero code or an
# OOM kill. The publish time is the update's own events' time on the platform clock.
set -euo pipefail

: "${RULE:?RULE must be timestamp or count}" "${FLY_API_HOSTNAME:?}" "${FLY_API_TOKEN:?}"
: "${FLY_APP_NAME:?}"
STEP="${STEP:-$([[ -n ${FLY_IMAGE_REF:-} ]] && echo deploy || echo check)}"
LOOK_DELAY_S="${LOOK_DELAY_S:-10}"
WAIT_TIMEOUT_S="${WAIT_TIMEOUT_S:-60}"
case "$RULE" in timestamp|count) ;; *) echo "RULE must be timestamp or count" >&2; exit 2 ;; esac
case "$STEP" in deploy) : "${FLY_IMAGE_REF:?STEP=deploy needs FLY_IMAGE_REF}" ;; check) ;;
  *) echo "STEP must be deploy or check" >&2; exit 2 ;; esac
BASE="$FLY_API_HOSTNAME/v1/apps/$FLY_APP_NAME"

api() {  # api METHOD PATH [BODY]: the JSON body on stdout; non-2xx: message, exit 2
  local method=$1 path=$2 body=${3:-} out status
  out=$(curl -sS -X "$method" -H "Authorization: Bearer $FLY_API_TOKEN" \
        -H 'Content-Type: application/json' ${body:+--data "$body"} \
        -w '\n%{http_code}' "$BASE$path") || { echo "curl failed: $method $path" >&2; exit 2; }
  status=${out##*$'\n'}
  out=${out%$'\n'*}
  if [[ $status != 2* ]]; then
    echo "$method $path -> $status $(jq -r '.error // .' <<<"$out")" >&2
    return 1
  fi
  printf '%s\n' "$out"
}

update_all() {  # update_all IMAGE: every machine to IMAGE, then wait until each is started
  local image=$1 id version
  for id in $ids; do
    version=$(api POST "/machines/$id" "$(jq -nc --arg i "$image" '{config: {image: $i}}')" \
              | tee "$tmp/update-$id.json" | jq -r .instance_id) || exit 2
    api GET "/machines/$id/wait?state=started&timeout=$WAIT_TIMEOUT_S&instance_id=$version" \
        >/dev/null || echo "machine $id did not reach started within ${WAIT_TIMEOUT_S}s" >&2
  done
}

# Crashes since the publish: exits not asked for, with a non-zero code or an OOM kill.
CRASHES='[.events[]? | select(.type == "exit" and .timestamp >= $p
          and (.request.exit_event.requested_stop | not)
          and ((.request.exit_event.exit_code // 0) != 0 or .request.exit_event.oom_killed))]'

judge() {  # judge LOOK2 LOOK3: "failed REASON" or "live REASON"
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

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
api GET /machines >"$tmp/before.json" || exit 2
ids=$(jq -r '.[].id' "$tmp/before.json")
previous=$(jq -r '[.[].config.image // empty][0] // empty' "$tmp/before.json")

if [[ $STEP == deploy ]]; then
  update_all "$FLY_IMAGE_REF"
  publish_ms=$(jq -s '[.[].events[]?.timestamp] | max' "$tmp"/update-*.json)
else
  # Published already: the newest launch or update event is the publish; wait for each
  # machine's current version to be started.
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
api GET /machines >"$tmp/look2.json" || exit 2
if down=$(jq -r '.[] | select(.state != "started") | .id' "$tmp/look2.json") && [[ -n $down ]]; then
  verdict="failed not started at look 2: $down"
elif [[ $(jq --argjson p "$publish_ms" "[.[] | $CRASHES | length] | add" "$tmp/look2.json") == 0 ]]; then
  verdict="live started twice ${LOOK_DELAY_S}s apart with no crash since the publish"
else
  sleep "$LOOK_DELAY_S"
  api GET /machines >"$tmp/look3.json" || exit 2
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
