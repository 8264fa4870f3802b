#!/usr/bin/env bash
# The timestamp rule, asking again after a 5xx, a 429 (its Retry-After), a cut connection
# or a wait's 408, up to API_TRIES times. See deploy-on-error.sh.
RULE=timestamp ON_API_ERROR=retry exec "$(dirname "$0")/deploy-on-error.sh" "$@"
