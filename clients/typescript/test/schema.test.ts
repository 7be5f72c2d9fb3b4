// Each interface of src/types.ts names exactly the properties of its object
// in docs/schema/ (read with the TypeScript compiler's parser), so a field
// added to the contract fails here until the client has it too.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import ts from "typescript";

import { refusalKinds } from "../src/errors.js";
import { REPO } from "./support.js";

const schemaDir = join(REPO, "docs", "schema");
const load = (name: string) => JSON.parse(readFileSync(join(schemaDir, `${name}.schema.json`), "utf8"));

// interfaceFields: interface name -> its own property names plus those of
// the interfaces it extends.
function interfaceFields(): Map<string, Set<string>> {
  const file = join(REPO, "clients", "typescript", "src", "types.ts");
  const src = ts.createSourceFile(file, readFileSync(file, "utf8"), ts.ScriptTarget.ES2022, true);
  const own = new Map<string, { props: string[]; bases: string[] }>();
  src.forEachChild((node) => {
    if (!ts.isInterfaceDeclaration(node)) return;
    const props = node.members.filter(ts.isPropertySignature).map((m) => m.name.getText(src));
    const bases = (node.heritageClauses ?? []).flatMap((h) => h.types.map((t) => t.expression.getText(src)));
    own.set(node.name.text, { props, bases });
  });
  const all = (name: string): string[] => {
    const i = own.get(name);
    assert.ok(i, `no interface ${name} in src/types.ts`);
    return [...i.props, ...i.bases.flatMap(all)];
  };
  return new Map([...own.keys()].map((n) => [n, new Set(all(n))]));
}

describe("types match docs/schema", () => {
  const req = load("exec-request");
  const res = load("exec-result").$defs;
  const rep = load("report").$defs;
  const profile = req.$defs.profile.properties;
  const props = (o: { properties: object }) => Object.keys(o.properties).sort();
  const cases: Array<[string, string[]]> = [
    ["ExecRequest", props(req)],
    ["Profile", props(req.$defs.profile)],
    ["NetworkPermission", props(profile.network)],
    ["FileSystemPermissions", props(profile.file_system)],
    ["Grants", props(req.$defs.grants)],
    ["EnvPolicy", props(req.$defs.env_policy)],
    ["Shell", props(req.$defs.shell)],
    ["FsOp", props(req.$defs.fs)],
    ["Pty", props(req.properties.pty)],
    ["Limits", props(rep.limits)],
    ["Report", props(rep.report)],
    // "event" is only on the last line of a stream, which this client does not read.
    ["ExecResult", [...new Set([...props(rep.report), ...props(res.result)])].filter((f) => f !== "event").sort()],
    ["FsResult", [...new Set([...props(rep.report), ...props(res.fs_result)])].sort()],
    ["Refusal", props(res.refusal)],
    ["ErrorDetail", props(res.error)],
    ["Downgrade", props(rep.downgrade)],
    ["Denial", props(rep.denial)],
    ["Retry", props(rep.retry)],
    ["Permissions", props(rep.permissions)],
    ["EnvReport", props(rep.env)],
  ];
  const fields = interfaceFields();
  for (const [name, want] of cases) {
    it(name, () => {
      assert.deepEqual([...(fields.get(name) ?? [])].sort(), want);
    });
  }

  it("every error kind is a refusal class, exec_failed, or an fs result's kind", () => {
    const kinds = [...res.error.properties.kind.enum].sort();
    assert.deepEqual(kinds, [...refusalKinds, "exec_failed", "denied", "failed"].sort());
  });

  it("the required request fields are the non-optional ones", () => {
    const file = join(REPO, "clients", "typescript", "src", "types.ts");
    const src = ts.createSourceFile(file, readFileSync(file, "utf8"), ts.ScriptTarget.ES2022, true);
    const required = new Map<string, string[]>();
    src.forEachChild((n) => {
      if (ts.isInterfaceDeclaration(n))
        required.set(n.name.text, n.members.filter(ts.isPropertySignature).filter((m) => !m.questionToken).map((m) => m.name.getText(src)).sort());
    });
    assert.deepEqual(required.get("ExecRequest"), [...req.required].sort());
    assert.deepEqual(required.get("Shell"), [...req.$defs.shell.required].sort());
    assert.deepEqual(required.get("FsOp"), [...req.$defs.fs.required].sort());
    assert.deepEqual(required.get("Denial"), [...rep.denial.required].sort());
    assert.deepEqual(required.get("Report"), [...rep.report.required].sort());
  });
});

describe("errorFor", () => {
  it("maps each refusal kind to its class, and an unknown kind to SbxError", async () => {
    const e = await import("../src/errors.js");
    const cases: Array<[Record<string, string>, Function, string | undefined, string | undefined]> = [
      [{ kind: "invalid_request", message: "m", field: "cwd" }, e.InvalidRequestError, "field", "cwd"],
      [{ kind: "denied_by_policy", message: "m", outcome: "cancelled" }, e.DeniedByPolicyError, "outcome", "cancelled"],
      [{ kind: "unsupported", message: "m", feature: "netns" }, e.UnsupportedError, "feature", "netns"],
      [{ kind: "internal", message: "m" }, e.InternalError, undefined, undefined],
      [{ kind: "quota", message: "m" }, e.SbxError, undefined, undefined],
    ];
    for (const [d, cls, attr, want] of cases) {
      const err = e.errorFor(d as never, d);
      assert.equal(Object.getPrototypeOf(err).constructor, cls, d.kind);
      assert.equal(err.kind, d.kind);
      if (attr) assert.equal((err as unknown as Record<string, unknown>)[attr], want);
    }
  });
});
