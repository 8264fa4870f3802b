"""Derive openapi3.machines.twin.json from Fly's spec (openapi3.machines.json); see SOURCE.md.

Run from this folder: ``python3 make_twin_spec.py`` (stdlib only). Only documented or
observed real-API behaviour is added:
  1. de-duplicate operationId Machines_update_metadata (PUT -> Machines_update_metadata_put):
     the upstream document fails openapi-spec-validator, which openapi-core runs on load.
  2. an optional ``fly-machine-lease-nonce`` header on every mutating machine operation
     (fly-go sends it on update/start/stop/restart/destroy/cordon/uncordon/suspend; the spec
     declares it only on /lease).
  3. POST /lease: a ``ttl`` query parameter (fly-go AcquireLease/RefreshLease send ?ttl=N and
     no body), the request body not required; the lease responses in the real envelope
     {"status":"success","data":{Lease}} (superfly/docs reference/machines/_machines_lease_*_resp.erb).
  4. a ``default`` ErrorResponse on every machine operation, and an explicit 408 on /wait
     (superfly/flyctl#1760 shows the 408 and its body).
"""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path
from typing import Any


def twin(spec: dict[str, Any]) -> dict[str, Any]:
    """The spec with the four changes above."""
    paths, schemas = spec["paths"], spec["components"]["schemas"]
    machine = "/apps/{app_name}/machines/{machine_id}"
    # 1
    paths[machine + "/metadata"]["put"]["operationId"] = "Machines_update_metadata_put"
    # 2
    nonce = {"name": "fly-machine-lease-nonce", "in": "header", "required": False,
             "description": "Lease nonce; required when the machine is leased",
             "schema": {"type": "string"}}
    for path, method in [(machine, "post"), (machine, "delete"), (machine + "/start", "post"),
                         (machine + "/stop", "post"), (machine + "/restart", "post"),
                         (machine + "/cordon", "post"), (machine + "/uncordon", "post"),
                         (machine + "/suspend", "post")]:
        op = paths[path][method]
        if not any(p.get("name") == nonce["name"] for p in op.get("parameters", [])):
            op.setdefault("parameters", []).append(copy.deepcopy(nonce))
    # 3
    schemas["LeaseResponse"] = {"type": "object", "properties": {
        "status": {"type": "string"}, "data": {"$ref": "#/components/schemas/Lease"},
        "message": {"type": "string"}, "code": {"type": "string"}}}
    schemas["OkResponse"] = {"type": "object", "properties": {"ok": {"type": "boolean"}}}
    lease = paths[machine + "/lease"]
    post = lease["post"]
    post["parameters"].append({"name": "ttl", "in": "query", "required": False,
                               "description": "seconds lease will be valid (fly-go sends it here)",
                               "schema": {"type": "integer"}})
    post["requestBody"]["required"] = False
    envelope = {"application/json": {"schema": {"$ref": "#/components/schemas/LeaseResponse"}}}
    post["responses"]["201"]["content"] = copy.deepcopy(envelope)
    post["responses"]["200"] = {"description": "OK (refresh)", "content": copy.deepcopy(envelope)}
    lease["get"]["responses"]["200"]["content"] = copy.deepcopy(envelope)
    lease["delete"]["responses"]["200"]["content"] = {
        "application/json": {"schema": {"type": "object", "properties": {
            "status": {"type": "string"}, "data": {"$ref": "#/components/schemas/OkResponse"}}}}}
    # 4
    error = {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorResponse"}}}
    for path, item in paths.items():
        if not path.startswith("/apps/{app_name}/machines"):
            continue
        for op in item.values():
            if isinstance(op, dict) and "responses" in op:
                op["responses"].setdefault(
                    "default", {"description": "Error", "content": copy.deepcopy(error)})
    paths[machine + "/wait"]["get"]["responses"]["408"] = {
        "description": "Request Timeout (state not reached)", "content": copy.deepcopy(error)}
    return spec


def main(argv: list[str]) -> None:
    """Read the upstream file, write the twin's (paths from argv, else the defaults here)."""
    source = Path(argv[1] if len(argv) > 1 else "openapi3.machines.json")
    target = Path(argv[2] if len(argv) > 2 else "openapi3.machines.twin.json")
    spec = twin(json.loads(source.read_text(encoding="utf-8")))
    target.write_text(json.dumps(spec, indent=2), encoding="utf-8")
    print("wrote", target)


if __name__ == "__main__":
    main(sys.argv)
