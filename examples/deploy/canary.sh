#!/usr/bin/env bash
# A canary deploy against Fly's Machines API, in the shape of flyctl's
# `fly deploy --strategy canary` (superfly/flyctl internal/command/deploy: a canary machine
# on the new image first, then the rolling update): create one canary on FLY_IMAGE_REF,
# wait for it to start, watch it LOOKS times LOOK_DELAY_S apart, and fail on a crash since
# it was created (an exit not asked for, non-zero or OOM-killed) or the canary not started.
# The canary is destroyed either way; on a pass each machine is then updated in turn,
# waited for and looked at once more (LOOK_DELAY_S later); a crash there rolls the updated
# ones back to the image they ran. Exit 0: live; 1: failed (canary destroyed, or rolled
# back); 2: a usage or API error.
#
#   FLY_API_HOSTNAME (the base URL) FLY_API_TOKEN FLY_APP_NAME FLY_IMAGE_REF
#   LOOK_DELAY_S (default 10)  LOOKS (default 3)  WAIT_TIMEOUT_S (default 60, Fly's most)
set -euo pipefail

: "${FLY_API_HOSTNAME:?}" "${FLY_API_TOKEN:?}" "${FLY_APP_NAME:?}" "${FLY_IMAGE_REF:?}"
LOOK_DELAY_S="${LOOK_DELAY_S:-10}"
LOOKS="${LOOKS:-3}"
WAIT_TIMEOUT_S="${WAIT_TIMEOUT_S:-60}"
# shellcheck source=api.sh
. "$(dirname "$0")/api.sh"

healthy() {  # healthy ID SINCE_MS: "" if started with no crash since SINCE_MS, else why not
  local machine state crashes
  machine=$(api GET "/machines/$1") || exit 2
  state=$(jq -r .state <<<"$machine")
  crashes=$(jq --argjson p "$2" "$CRASHES" <<<"$machine")
  [[ $state == started && $crashes == 0 ]] || echo "$1 is $state with $crashes crash(es)"
}

started() {  # started ID VERSION: wait for that version to start
  api GET "/machines/$1/wait?state=started&timeout=$WAIT_TIMEOUT_S&instance_id=$2" >/dev/null \
    || echo "machine $1 did not reach started within ${WAIT_TIMEOUT_S}s" >&2
}

before=$(api GET /machines) || exit 2
ids=$(jq -r '.[] | select(.state == "started" or .state == "stopped") | .id' <<<"$before")
previous=$(jq -r '[.[].config.image // empty][0] // empty' <<<"$before")
[[ -n $ids ]] || { echo "no machine to update" >&2; exit 2; }

canary=$(api POST /machines "$(jq -nc --arg i "$FLY_IMAGE_REF" '{config: {image: $i}}')") || exit 2
canary_id=$(jq -r .id <<<"$canary")
since=$(jq '[.events[]?.timestamp] | min' <<<"$canary")
started "$canary_id" "$(jq -r .instance_id <<<"$canary")"
why=""
for _look in $(seq "$LOOKS"); do
  sleep "$LOOK_DELAY_S"
  why=$(healthy "$canary_id" "$since")
  [[ -z $why ]] || break
done
api DELETE "/machines/$canary_id?force=true" >/dev/null || exit 2
if [[ -n $why ]]; then
  echo "canary: canary $why (failed)"
  exit 1
fi

updated=()
for id in $ids; do
  machine=$(api POST "/machines/$id" "$(jq -nc --arg i "$FLY_IMAGE_REF" '{config: {image: $i}}')") || exit 2
  updated+=("$id")
  started "$id" "$(jq -r .instance_id <<<"$machine")"
  sleep "$LOOK_DELAY_S"
  why=$(healthy "$id" "$(jq '[.events[]?.timestamp] | max' <<<"$machine")")
  if [[ -n $why ]]; then
    echo "canary: rolling update: $why (failed)"
    echo "rolling back ${updated[*]} to $previous" >&2
    for back in "${updated[@]}"; do
      api POST "/machines/$back" "$(jq -nc --arg i "$previous" '{config: {image: $i}}')" >/dev/null || exit 2
    done
    exit 1
  fi
done
echo "canary: the canary and every update started with no crash (live)"
