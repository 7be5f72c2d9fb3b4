"""The kind-to-class mapping, for the kinds the real-binary tests cannot
provoke on every machine (unsupported needs a degraded feature; internal an
sbx failure)."""

import unittest

import sbx
from sbx.errors import error_for


class ErrorForTest(unittest.TestCase):
    def test_kinds(self):
        cases = [
            ({"kind": "invalid_request", "message": "m", "field": "cwd"}, sbx.InvalidRequestError, "field", "cwd"),
            ({"kind": "denied_by_policy", "message": "m", "outcome": "cancelled"}, sbx.DeniedByPolicyError, "outcome", "cancelled"),
            ({"kind": "unsupported", "message": "m", "feature": "netns"}, sbx.UnsupportedError, "feature", "netns"),
            ({"kind": "internal", "message": "m"}, sbx.InternalError, None, None),
        ]
        for d, cls, attr, want in cases:
            with self.subTest(kind=d["kind"]):
                e = error_for(sbx.ErrorDetail.from_dict(d), {"error_detail": d})
                self.assertIs(type(e), cls)
                self.assertEqual(e.kind, d["kind"])
                if attr:
                    self.assertEqual(getattr(e, attr), want)

    def test_unknown_kind_is_a_plain_sbx_error(self):
        # A newer sbx may add kinds (and fields): neither may break the client.
        e = error_for(sbx.ErrorDetail.from_dict({"kind": "quota", "message": "m", "limit": 3}), {})
        self.assertIs(type(e), sbx.SbxError)
        self.assertEqual(e.detail.kind, "quota")


if __name__ == "__main__":
    unittest.main()
