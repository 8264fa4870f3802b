#!/usr/bin/env python3
"""Two looks 10 s apart with the standard library's HTTP client (tests/test_vtime_step.py)."""

import json
import os
import time
import urllib.request

BASE = os.environ["FLY_API_HOSTNAME"].rstrip("/")
if not BASE.startswith("http"):
    BASE = "http://" + BASE


def get(path: str) -> list[dict[str, str]]:
    """One read of the API."""
    request = urllib.request.Request(
        f"{BASE}/v1/apps/{os.environ['FLY_APP_NAME']}{path}",
        headers={"Authorization": f"Bearer {os.environ['FLY_API_TOKEN']}"})
    with urllib.request.urlopen(request, timeout=30) as answer:  # the twin, on loopback
        return json.load(answer)


start = time.time()
get("/machines")
time.sleep(10)
states = [m["state"] for m in get("/machines")]
print(f"python {time.time() - start:.3f} s {states}")
