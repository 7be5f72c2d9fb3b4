// The sbx serve approval panel: the pending approvals as cards, the
// sessions' presets, live from /api/events. Every /api request carries the
// token of the URL sbx serve printed, in the X-Sbx-Token header.
"use strict";

const params = new URLSearchParams(location.search);
if (params.has("token")) {
  sessionStorage.setItem("sbx-token", params.get("token"));
  history.replaceState(null, "", "/");
}
const token = sessionStorage.getItem("sbx-token");
const $ = (id) => document.getElementById(id);
const cards = new Map(); // approval_id -> card element

function status(text, cls) {
  const s = $("status");
  s.textContent = text;
  s.className = "status " + (cls || "");
}

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v; else e.setAttribute(k, v);
  }
  for (const c of children) e.append(c);
  return e;
}

async function api(path, body) {
  const r = await fetch(path, {
    method: "POST",
    headers: { "Content-Type": "application/json", "X-Sbx-Token": token },
    body: JSON.stringify(body),
  });
  let data = null;
  try { data = await r.json(); } catch (e) { /* no body */ }
  return { status: r.status, data };
}

// showArg quotes an argument that would not read as one word.
function showArg(a) {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(a) ? a : "'" + a.replace(/'/g, "'\\''") + "'";
}

// asked lists what the question is about (the one question every answerer
// gets), as the terminal prompt does: the mode asked for, or what is new.
function asked(a) {
  const lines = [];
  if (a.target_mode) lines.push("run under " + a.target_mode);
  const p = a.new_permissions || a.additional_permissions;
  const fs = (p && p.file_system) || {};
  const net = (p && p.network) || {};
  const domains = net.allowed_domains || [];
  if (net.enabled && !domains.length) lines.push("network: enabled");
  for (const d of domains) lines.push("network domain: " + d);
  for (const d of net.denied_domains || []) lines.push("denied domain: " + d);
  if (net.enabled && net.allow_private_addresses) lines.push("private addresses: allowed");
  for (const w of fs.write || []) lines.push("write: " + w);
  for (const r of fs.read || []) lines.push("read: " + r);
  for (const c of a.cap_add || []) lines.push("keep capability: " + c);
  // Missing tool directories sbx makes, as the calling user, if allowed.
  for (const c of a.create || []) lines.push("create (missing, made as you): " + c);
  return lines;
}

function card(a) {
  const note = el("div", { class: "note" });
  const reject = el("button", { class: "reject" }, "Reject");
  const allow = el("button", { class: "allow" }, "Allow once");
  const c = el("div", { class: "card", "data-approval-id": a.approval_id },
    el("div", { class: "reason" }, a.reason || "(no reason given)"),
    el("div", { class: "meta" }, `${a.tool_name} · session ${a.session_id}` + (a.call_id ? ` · call ${a.call_id}` : "")));
  const wants = asked(a);
  if (wants.length) c.append(el("pre", { class: "asked" }, wants.join("\n")));
  if (a.command) c.append(el("pre", { class: "command" }, a.command.map(showArg).join(" ")));
  c.append(el("div", { class: "buttons" }, reject, allow), note);
  const answer = async (outcome) => {
    reject.disabled = allow.disabled = true;
    note.className = "note";
    note.textContent = "sending…";
    try {
      const r = await api("/api/answer", { approval_id: a.approval_id, outcome });
      if (r.status === 200) {
        note.textContent = outcome === "allowed-once" ? "allowed once" : "rejected";
        return;
      }
      note.className = "note error";
      note.textContent = (r.data && r.data.error && r.data.error.message) || "refused: " + r.status;
      if (r.status !== 409) reject.disabled = allow.disabled = false;
    } catch (e) {
      // Nothing was answered: the buttons are open again.
      note.className = "note error";
      note.textContent = "not sent: " + e.message;
      reject.disabled = allow.disabled = false;
    }
  };
  reject.addEventListener("click", () => answer("rejected"));
  allow.addEventListener("click", () => answer("allowed-once"));
  return c;
}

function renderApprovals(list) {
  const box = $("approvals");
  const live = new Set(list.map((a) => a.approval_id));
  for (const [id, c] of cards) {
    if (!live.has(id)) { c.remove(); cards.delete(id); }
  }
  for (const a of list) {
    if (!cards.has(a.approval_id)) {
      const c = card(a);
      cards.set(a.approval_id, c);
      box.append(c);
    }
  }
  const empty = box.querySelector(".empty");
  if (list.length === 0 && !empty) box.append(el("p", { class: "empty" }, "Nothing is waiting."));
  if (list.length > 0 && empty) empty.remove();
}

function renderSessions(list) {
  const box = $("sessions");
  box.replaceChildren();
  if (list.length === 0) box.append(el("p", { class: "empty" }, "No session is open."));
  for (const s of list) {
    const cur = s.current;
    // A granular approval policy is an object ({"granular": {...}}): shown
    // as the CLI spells it, granular: and the categories allowed.
    const policy = typeof cur.approval_policy === "string" ? cur.approval_policy :
      "granular:" + Object.keys(cur.approval_policy.granular).filter((k) => cur.approval_policy.granular[k]).join(",");
    const sel = el("select", { "data-session-id": cur.session_id });
    const selectable = new Set(s.selectable);
    for (const p of s.presets) {
      if (p.key === "custom" || !selectable.has(p.key)) continue;
      const o = el("option", { value: p.key }, p.label ? `${p.label} (${p.key})` : p.key);
      if (p.key === cur.preset) o.selected = true;
      sel.append(o);
    }
    if (!selectable.has(cur.preset)) {
      const o = el("option", { value: "", disabled: "" }, `${cur.preset} (${cur.sandbox_mode}, ${policy})`);
      o.selected = true;
      sel.prepend(o);
    }
    const note = el("div", { class: "note" });
    const row = el("div", { class: "session" }, el("label", {}, `session ${cur.session_id}`), sel,
      el("span", { class: "meta" }, ` ${cur.sandbox_mode} · ${policy}`), note);
    sel.addEventListener("change", () => choose(s, sel, row, note));
    box.append(row);
  }
}

async function choose(s, sel, row, note) {
  const key = sel.value;
  const p = s.presets.find((x) => x.key === key);
  const send = async (confirm) => {
    note.className = "note";
    note.textContent = "sending…";
    try {
      const body = { session_id: s.current.session_id, key };
      if (confirm) body.confirm = true;
      const r = await api("/api/preset", body);
      if (r.status !== 200) {
        note.className = "note error";
        note.textContent = (r.data && r.data.error && r.data.error.message) || "refused: " + r.status;
        sel.value = s.current.preset;
      } else note.textContent = "";
    } catch (e) {
      note.className = "note error";
      note.textContent = "not sent: " + e.message;
      sel.value = s.current.preset;
    }
  };
  if (p && p.sandbox_mode === "danger-full-access") {
    const yes = el("button", { class: "confirm-yes" }, "Allow full access");
    const no = el("button", { class: "confirm-no" }, "Cancel");
    const box = el("div", { class: "confirm" },
      el("p", {}, `${key} runs commands without any sandbox (danger-full-access). Sure?`), yes, no);
    row.append(box);
    sel.disabled = true;
    yes.addEventListener("click", () => { box.remove(); sel.disabled = false; send(true); });
    no.addEventListener("click", () => { box.remove(); sel.disabled = false; sel.value = s.current.preset; });
    return;
  }
  send(false);
}

async function stream() {
  for (;;) {
    try {
      const r = await fetch("/api/events", { headers: { "X-Sbx-Token": token } });
      if (r.status !== 200) {
        let msg = "refused: " + r.status;
        try { msg = (await r.json()).error.message; } catch (e) { /* no body */ }
        status(msg, "bad");
        return;
      }
      status("connected", "ok");
      const reader = r.body.pipeThrough(new TextDecoderStream()).getReader();
      let buf = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += value;
        let i;
        while ((i = buf.indexOf("\n\n")) >= 0) {
          const ev = buf.slice(0, i);
          buf = buf.slice(i + 2);
          const data = ev.split("\n").filter((l) => l.startsWith("data: ")).map((l) => l.slice(6)).join("\n");
          if (!data) continue;
          const st = JSON.parse(data);
          renderApprovals(st.approvals);
          renderSessions(st.sessions);
        }
      }
    } catch (e) { /* reconnect below */ }
    status("disconnected: reconnecting…", "bad");
    await new Promise((res) => setTimeout(res, 1000));
  }
}

if (!token) status("no token: open the URL sbx serve printed", "bad");
else stream();
