#!/usr/bin/env bash
# The deploy step with the timestamp rule (the fix): see deploy.sh.
RULE=timestamp exec "$(dirname "$0")/deploy.sh" "$@"
