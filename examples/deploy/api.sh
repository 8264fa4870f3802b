# Sourced by bluegreen.sh and canary.sh: the Machines API call and the crash filter they share.
# (deploy.sh, the first of these scripts, keeps its own copy: it predates this file.)
BASE="$FLY_API_HOSTNAME/v1/apps/$FLY_APP_NAME"

api() {  # api METHOD PATH [BODY]: the JSON body on stdout; non-2xx: message on stderr, status 1
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

# How many crashes since $p (platform ms) a machine's events show: exits not asked for,
# with a non-zero code or an OOM kill.
CRASHES='[.events[]? | select(.type == "exit" and .timestamp >= $p
          and (.request.exit_event.requested_stop | not)
          and ((.request.exit_event.exit_code // 0) != 0 or .request.exit_event.oom_killed))] | length'
