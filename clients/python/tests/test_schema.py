"""The dataclasses name exactly the properties of their JSON Schema objects
(docs/schema/), so a field added to the contract shows up here as a failure
until the client has it too."""

import dataclasses
import json
import os
import unittest

import sbx

from .support import REPO

SCHEMA_DIR = os.path.join(REPO, "docs", "schema")


def load(name):
    with open(os.path.join(SCHEMA_DIR, name + ".schema.json")) as f:
        return json.load(f)


def fields(cls):
    return {f.name for f in dataclasses.fields(cls)} - {"raw"}


@unittest.skipUnless(os.path.isdir(SCHEMA_DIR), f"no schemas at {SCHEMA_DIR} (not run from the sbx checkout)")
class SchemaTest(unittest.TestCase):
    def test_request_types_match_the_schema(self):
        req = load("exec-request")
        report = load("report")
        defs = req["$defs"]
        profile = defs["profile"]["properties"]
        cases = [
            (sbx.ExecRequest, req["properties"]),
            (sbx.Profile, profile),
            (sbx.NetworkPermission, profile["network"]["properties"]),
            (sbx.FileSystemPermissions, profile["file_system"]["properties"]),
            (sbx.Grants, defs["grants"]["properties"]),
            (sbx.EnvPolicy, defs["env_policy"]["properties"]),
            (sbx.Shell, defs["shell"]["properties"]),
            (sbx.FsOp, defs["fs"]["properties"]),
            (sbx.Pty, req["properties"]["pty"]["properties"]),
            (sbx.Limits, report["$defs"]["limits"]["properties"]),
        ]
        for cls, props in cases:
            with self.subTest(cls=cls.__name__):
                self.assertEqual(fields(cls), set(props), f"{cls.__name__} vs the schema")

    def test_required_request_fields_have_no_default(self):
        req = load("exec-request")
        for cls, schema in [(sbx.ExecRequest, req), (sbx.Shell, req["$defs"]["shell"]), (sbx.FsOp, req["$defs"]["fs"])]:
            required = {f.name for f in dataclasses.fields(cls) if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING}
            with self.subTest(cls=cls.__name__):
                self.assertEqual(required, set(schema.get("required", [])))

    def test_result_types_match_the_schema(self):
        result = load("exec-result")["$defs"]
        report = load("report")["$defs"]
        cases = [
            (sbx.Report, report["report"]["properties"]),
            (sbx.ExecResult, {**report["report"]["properties"], **result["result"]["properties"]}),
            (sbx.FsResult, {**report["report"]["properties"], **result["fs_result"]["properties"]}),
            (sbx.ErrorDetail, result["error"]["properties"]),
            (sbx.Downgrade, report["downgrade"]["properties"]),
            (sbx.Denial, report["denial"]["properties"]),
            (sbx.Retry, report["retry"]["properties"]),
            (sbx.Permissions, report["permissions"]["properties"]),
            (sbx.EnvReport, report["env"]["properties"]),
        ]
        for cls, props in cases:
            want = set(props) - {"event"}  # the stream's last line only: this client does not stream
            with self.subTest(cls=cls.__name__):
                self.assertEqual(fields(cls), want, f"{cls.__name__} vs the schema")

    def test_error_classes_cover_every_refusal_kind(self):
        kinds = set(load("exec-result")["$defs"]["error"]["properties"]["kind"]["enum"])
        typed = {c.kind for c in (sbx.InvalidRequestError, sbx.DeniedByPolicyError, sbx.UnsupportedError, sbx.ExecFailedError, sbx.InternalError)}
        # denied and failed are fs results' error kinds: reported in the result, not raised.
        self.assertEqual(kinds, typed | {"denied", "failed"})

    def test_examples_parse(self):
        ex = os.path.join(SCHEMA_DIR, "examples")
        for name, parse in [
            ("exec-request.json", sbx.ExecRequest.from_dict),
            ("exec-request-fs.json", sbx.ExecRequest.from_dict),
            ("exec-request-escalation.json", sbx.ExecRequest.from_dict),
            ("exec-result.json", sbx.ExecResult.from_dict),
            ("exec-result-fs-denied.json", sbx.FsResult.from_dict),
        ]:
            with self.subTest(example=name):
                with open(os.path.join(ex, name)) as f:
                    d = json.load(f)
                obj = parse(d)
                if isinstance(obj, sbx.ExecRequest):
                    # A request survives the round trip unchanged.
                    self.assertEqual(obj.to_dict(), d)

    def test_from_dict_refuses_unknown_request_fields(self):
        with self.assertRaisesRegex(ValueError, r"request\.SANDBOX_MODE: unknown field"):
            sbx.ExecRequest.from_dict({"cwd": "/", "command": ["true"], "SANDBOX_MODE": "x"})
        with self.assertRaisesRegex(ValueError, r"file_system\.wirte: unknown field"):
            sbx.ExecRequest.from_dict({"cwd": "/", "command": ["true"], "additional_permissions": {"file_system": {"wirte": []}}})


if __name__ == "__main__":
    unittest.main()
