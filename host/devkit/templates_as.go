package devkit

// asFiles are the AssemblyScript scaffold's templates: Extism's
// @extism/as-pdk for input and output, assemblyscript-json to read the
// input, and assembly/skillhost.ts for the skillhost host functions.
var asFiles = []scaffoldFile{
	{"package.json", `{
  "name": "[[.Name]]",
  "version": "0.1.0",
  "private": true,
  "description": "A skillhost plugin in AssemblyScript, scaffolded by skillhost [[.Version]]",
  "scripts": {
    "build": "asc assembly/index.ts --outFile [[.Name]].wasm --optimize --use abort=assembly/index/abort"
  },
  "devDependencies": {
    "@extism/as-pdk": "1.0.0",
    "assemblyscript": "0.27.37",
    "assemblyscript-json": "1.1.0"
  }
}
`},
	{".gitignore", "node_modules/\n*.wasm\n"},
	{"plugin.yaml", helloManifest},
	{"assembly/tsconfig.json", `{
  "extends": "assemblyscript/std/assembly.json",
  "include": ["./**/*.ts"]
}
`},
	{"assembly/index.ts", `// The skill [[.Skill]] of the skillhost plugin [[.Name]]. Build it with
//
//   skillhost plugin build .      (npm install, then npm run build)
//
// Each exported function is a skill's wasm export (plugin.yaml: function).
// It returns 0 on success (after setting the output) or 1 after fail().
import { JSON } from "assemblyscript-json/assembly";
import { fail, input, jsonString, log, output } from "./skillhost";

export function [[.Skill]](): i32 {
  // The host has checked the input against the skill's input_schema.
  const parsed = JSON.parse(input());
  if (!parsed.isObj) {
    return fail("invalid_input", "the input is not a JSON object");
  }
  const obj = <JSON.Obj>parsed;
  const nameValue = obj.getString("name");
  const name = nameValue == null ? "" : nameValue.valueOf().trim();
  if (name.length == 0) {
    return fail("invalid_input", "name is empty");
  }
  const excited = obj.getBool("excited");
  const end = excited != null && excited.valueOf() ? "!" : ".";
  log("debug", "greeting " + name);
  output('{"greeting":' + jsonString("Hello, " + name + end) + "}");
  return 0;
}

// abort is what a failed assertion or a runtime error calls (wired by
// "--use abort=assembly/index/abort" in package.json): it logs where, then
// traps, and the host reports the call as failed with reason "trap".
function abort(message: string | null, file: string | null, line: u32, column: u32): void {
  log("error", "abort: " + (message == null ? "" : message) + " at " + (file == null ? "?" : file) +
    ":" + line.toString() + ":" + column.toString());
  unreachable();
}
`},
	{"assembly/skillhost.ts", `// skillhost.ts: input, output, errors and the skillhost host functions for
// an AssemblyScript plugin (the ABI is in skillhost's docs/HOST_FUNCTIONS.md).
//
// Every skillhost host function lives in the import namespace
// "extism:host/user", takes the offset of an Extism memory block holding a
// JSON request and returns the offset of a block holding the JSON reply
// {"ok":true,"result":…} or {"ok":false,"error":{"code":…,"message":…}}
// (0 if the host could not reply). Only the functions a plugin calls end
// up imported by its module.
import { Host, Memory } from "@extism/as-pdk";

@external("extism:host/env", "length")
declare function extism_length(offset: u64): u64;
@external("extism:host/env", "error_set")
declare function extism_error_set(offset: u64): void;

@external("extism:host/user", "log")
declare function host_log(request: u64): u64;
@external("extism:host/user", "progress")
declare function host_progress(request: u64): u64;
@external("extism:host/user", "context_get")
declare function host_context_get(request: u64): u64;
@external("extism:host/user", "context_set")
declare function host_context_set(request: u64): u64;
@external("extism:host/user", "http_fetch")
declare function host_http_fetch(request: u64): u64;
@external("extism:host/user", "task_history")
declare function host_task_history(request: u64): u64;
@external("extism:host/user", "task_interrupt")
declare function host_task_interrupt(request: u64): u64;

/** input returns the call's input (JSON text). */
export function input(): string {
  return Host.inputString();
}

/** output sets the call's output (JSON text). */
export function output(json: string): void {
  // UTF-8 bytes, not Host.outputString (which counts UTF-16 units).
  Host.output(Uint8Array.wrap(String.UTF8.encode(json)));
}

/**
 * fail reports a structured error and returns 1, the value the export must
 * return: callers see reason "plugin_error" with plugin_code = code.
 */
export function fail(code: string, message: string): i32 {
  const mem = Memory.allocateString('{"code":' + jsonString(code) + ',"message":' + jsonString(message) + "}");
  extism_error_set(mem.offset);
  return 1;
}

/** log writes message to the host log at level debug, info, warn or error. */
export function log(level: string, message: string): void {
  const req = Memory.allocateString('{"level":' + jsonString(level) + ',"message":' + jsonString(message) + "}");
  reply(host_log(req.offset), req);
}

/** progress reports progress (0–100) to whoever waits for the call. */
export function progress(percent: f64, message: string): string {
  const req = Memory.allocateString('{"percent":' + percent.toString() + ',"message":' + jsonString(message) + "}");
  return reply(host_progress(req.offset), req);
}

/** contextGet reads key from the calling session's context: the reply JSON. */
export function contextGet(key: string): string {
  const req = Memory.allocateString('{"key":' + jsonString(key) + "}");
  return reply(host_context_get(req.offset), req);
}

/** contextSet stores valueJson under key for ttlMs milliseconds (0: the session's life). */
export function contextSet(key: string, valueJson: string, ttlMs: i64): string {
  const req = Memory.allocateString('{"key":' + jsonString(key) + ',"value":' + valueJson + ',"ttl_ms":' + ttlMs.toString() + "}");
  return reply(host_context_set(req.offset), req);
}

/** httpFetch GETs url (a host in permissions.allowed_hosts): the reply JSON. */
export function httpFetch(url: string): string {
  const req = Memory.allocateString('{"method":"GET","url":' + jsonString(url) + "}");
  return reply(host_http_fetch(req.offset), req);
}

/**
 * askInput ends an A2A task's turn asking the caller question (the task
 * becomes input-required; the follow-up's parts are the next turn's input).
 * Return its result from the export: 0 (no output), or 1 with the host's
 * error set (not_a_task outside an A2A task: skill/execute, plans, …).
 */
export function askInput(question: string): i32 {
  return interrupt("input-required", question);
}

/** needAuth is askInput for auth-required: text says what is needed. */
export function needAuth(text: string): i32 {
  return interrupt("auth-required", text);
}

/**
 * taskHistory returns the reply JSON of task_history: {"ok":true,"result":
 * {"task_id","turn","messages":[{"role","text"?,"data"?}],"truncated"}},
 * the task's messages oldest first, this turn's last.
 */
export function taskHistory(): string {
  const req = Memory.allocateString("{}");
  return reply(host_task_history(req.offset), req);
}

function interrupt(state: string, text: string): i32 {
  const req = Memory.allocateString('{"state":' + jsonString(state) + ',"text":' + jsonString(text) + "}");
  const r = reply(host_task_interrupt(req.offset), req);
  if (r.startsWith('{"ok":true')) {
    return 0;
  }
  const at = r.indexOf('"error":');
  const err = at < 0 ? '{"code":"host_call","message":"task_interrupt returned no reply"}' : r.slice(at + 8, r.length - 1);
  extism_error_set(Memory.allocateString(err).offset);
  return 1;
}

/** jsonString quotes s as a JSON string. */
export function jsonString(s: string): string {
  let out = '"';
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c == 0x22) out += '\\"';
    else if (c == 0x5c) out += "\\\\";
    else if (c == 0x0a) out += "\\n";
    else if (c == 0x0d) out += "\\r";
    else if (c == 0x09) out += "\\t";
    else if (c < 0x20) out += "\\u00" + (c < 0x10 ? "0" : "") + c.toString(16);
    else out += String.fromCharCode(c);
  }
  return out + '"';
}

// reply frees the request block and returns the reply's text ("" if the
// host could not reply), freeing its block.
function reply(offset: u64, request: Memory): string {
  request.free();
  if (offset == 0) {
    return "";
  }
  const mem = new Memory(offset, extism_length(offset));
  const text = mem.toString();
  mem.free();
  return text;
}
`},
}
