#!/usr/bin/env bash
# A blue-green deploy against Fly's Machines API, in the shape of flyctl's
# `fly deploy --strategy bluegreen` (superfly/flyctl internal/command/deploy/strategy_bluegreen.go):
# beside each running ("blue") machine create a "green" one on FLY_IMAGE_REF, cordoned so
# it takes no traffic yet; wait for each green to start; watch the greens LOOKS times,
# LOOK_DELAY_S apart, and fail on any crash since they were created (an exit not asked for,
# with a non-zero code or an OOM kill) or a green not started; then uncordon the greens and
# destroy the blues (live), or destroy the greens (failed: the blues never stopped serving).
# Exit 0: live; 1: failed (greens destroyed); 2: a usage or API error.
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

blues=$(api GET /machines | jq -r '.[] | select(.state == "started" or .state == "stopped") | .id') || exit 2
[[ -n $blues ]] || { echo "no machine to replace" >&2; exit 2; }
greens=()
created_ms=()
for _blue in $blues; do
  green=$(api POST /machines "$(jq -nc --arg i "$FLY_IMAGE_REF" '{config: {image: $i}}')") || exit 2
  id=$(jq -r .id <<<"$green")
  greens+=("$id")
  created_ms+=("$(jq '[.events[]?.timestamp] | min' <<<"$green")")
  api POST "/machines/$id/cordon" >/dev/null || exit 2
done
for i in "${!greens[@]}"; do
  version=$(api GET "/machines/${greens[$i]}" | jq -r .instance_id) || exit 2
  api GET "/machines/${greens[$i]}/wait?state=started&timeout=$WAIT_TIMEOUT_S&instance_id=$version" \
      >/dev/null || echo "green ${greens[$i]} did not reach started within ${WAIT_TIMEOUT_S}s" >&2
done

verdict="live greens started with no crash over $LOOKS looks ${LOOK_DELAY_S}s apart"
for _look in $(seq "$LOOKS"); do
  sleep "$LOOK_DELAY_S"
  for i in "${!greens[@]}"; do
    machine=$(api GET "/machines/${greens[$i]}") || exit 2
    state=$(jq -r .state <<<"$machine")
    crashes=$(jq --argjson p "${created_ms[$i]}" "$CRASHES" <<<"$machine")
    if [[ $state != started || $crashes != 0 ]]; then
      verdict="failed green ${greens[$i]} is $state with $crashes crash(es) since it was created"
      break 2
    fi
  done
done

echo "bluegreen: ${verdict#* } (${verdict%% *})"
if [[ $verdict == failed* ]]; then
  echo "destroying the greens: ${greens[*]}" >&2
  for id in "${greens[@]}"; do api DELETE "/machines/$id?force=true" >/dev/null || exit 2; done
  exit 1
fi
for id in "${greens[@]}"; do api POST "/machines/$id/uncordon" >/dev/null || exit 2; done
for id in $blues; do api DELETE "/machines/$id?force=true" >/dev/null || exit 2; done
