#!/usr/bin/env bash
# The count rule as a check only (testbed compare --check-http): judge what the platform
# published, never update or roll back; see deploy.sh.
RULE=count STEP=check exec "$(dirname "$0")/deploy.sh" "$@"
