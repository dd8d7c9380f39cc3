package devkit

import (
	"fmt"
	"strings"
)

// watData are the bytes the WAT scaffold keeps in its linear memory: the
// log request it sends and the output it sets, with their lengths.
type watData struct {
	Log, Out, Err          string // escaped for a WAT string literal
	LogLen, OutLen, ErrLen int
	OutAt                  int // offset of Out (after Log, 16-byte aligned)
	ErrAt                  int // offset of Err (after Out, 16-byte aligned)
}

// watGreeting is the WAT scaffold's output.
const watGreeting = `{"greeting":"Hello from WebAssembly!"}`

// watRefusal is the error the WAT scaffold's second skill fails with.
const watRefusal = `{"code":"invalid_input","message":"this skill always refuses: an example of a plugin error"}`

func newWATData(name string) watData {
	logReq := fmt.Sprintf(`{"level":"info","message":"hello from %s"}`, name)
	esc := strings.NewReplacer(`\`, `\\`, `"`, `\"`)
	outAt := (len(logReq) + 15) &^ 15
	return watData{
		Log: esc.Replace(logReq), LogLen: len(logReq),
		Out: esc.Replace(watGreeting), OutLen: len(watGreeting),
		Err: esc.Replace(watRefusal), ErrLen: len(watRefusal),
		OutAt: outAt, ErrAt: (outAt + len(watGreeting) + 15) &^ 15,
	}
}

// watFiles are the WAT scaffold's templates: the smallest plugin there is,
// written by hand in the WebAssembly text format.
var watFiles = []scaffoldFile{
	{".gitignore", "*.wasm\n"},
	{"[[.Name]].wat", `;; [[.Name]].wat: a skillhost plugin written by hand in the WebAssembly
;; text format, the smallest kind of plugin there is. Build it with
;;
;;   skillhost plugin build .     (runs wabt's: wat2wasm [[.Name]].wat -o [[.Name]].wasm)
;;
;; The skill [[.Skill]] ignores its input, logs one line through skillhost's
;; "log" host function and outputs [[.WAT.Out]]. The skill refuse shows
;; how a plugin fails: it always reports an invalid_input error.
;;
;; Extism keeps the input, the output and every host-function request and
;; reply in its own memory blocks, outside this module's linear memory:
;; $block copies bytes from linear memory into a new block (alloc, then
;; store_u8 byte by byte); output_set hands a block to the host as the
;; output. A skillhost host function takes the offset of a block holding a
;; JSON request and returns the offset of a block holding the JSON reply
;; ({"ok":true,"result":…} or {"ok":false,"error":{"code":…,"message":…}}),
;; which the guest frees. An export returns 0 on success; to fail, it sets
;; an error block ({"code":…,"message":…}) with error_set and returns 1:
;; the caller gets -32103 plugin_error with that message and plugin_code.
(module
  (import "extism:host/env" "alloc" (func $alloc (param i64) (result i64)))
  (import "extism:host/env" "free" (func $free (param i64)))
  (import "extism:host/env" "store_u8" (func $store_u8 (param i64 i32)))
  (import "extism:host/env" "output_set" (func $output_set (param i64 i64)))
  (import "extism:host/env" "error_set" (func $error_set (param i64)))
  (import "extism:host/user" "log" (func $log (param i64) (result i64)))
  (memory (export "memory") 1)
  (data (i32.const 0) "[[.WAT.Log]]")
  (data (i32.const [[.WAT.OutAt]]) "[[.WAT.Out]]")
  (data (i32.const [[.WAT.ErrAt]]) "[[.WAT.Err]]")

  ;; $block copies $len bytes at $ptr into a new Extism memory block.
  (func $block (param $ptr i32) (param $len i32) (result i64)
    (local $off i64) (local $i i32)
    (local.set $off (call $alloc (i64.extend_i32_u (local.get $len))))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $i) (local.get $len)))
        (call $store_u8 (i64.add (local.get $off) (i64.extend_i32_u (local.get $i)))
          (i32.load8_u (i32.add (local.get $ptr) (local.get $i))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $next)))
    (local.get $off))

  (func (export "[[.Skill]]") (result i32)
    (local $req i64)
    ;; log {"level":"info","message":…}, then free the reply and the request
    (local.set $req (call $block (i32.const 0) (i32.const [[.WAT.LogLen]])))
    (call $free (call $log (local.get $req)))
    (call $free (local.get $req))
    ;; the output
    (call $output_set (call $block (i32.const [[.WAT.OutAt]]) (i32.const [[.WAT.OutLen]])) (i64.const [[.WAT.OutLen]]))
    (i32.const 0))

  (func (export "refuse") (result i32)
    ;; the error: a block holding {"code":…,"message":…}, then return 1
    (call $error_set (call $block (i32.const [[.WAT.ErrAt]]) (i32.const [[.WAT.ErrLen]])))
    (i32.const 1)))
`},
	{"plugin.yaml", `name: [[.Name]]
version: 0.1.0
description: A hand-written WebAssembly plugin scaffolded by "skillhost plugin new --lang wat"
wasm: [[.Name]].wasm
limits:
  timeout: 1s
  memory: 16MiB
  output: 64KiB
  concurrency: 4
permissions:
  allowed_hosts: []
  allowed_paths: {}
  config: {}
skills:
  - id: [[.Skill]]
    name: Hello
    description: Says hello (the input is ignored)
    tags: [example]
    function: [[.Skill]]
    examples:
      - {input: {}, output: {greeting: "Hello from WebAssembly!"}}
    input_schema: {type: object}
    output_schema:
      type: object
      required: [greeting]
      properties:
        greeting: {type: string}
  - id: [[.Name]]_refuse
    name: Refuse
    description: Always fails with a plugin error (an example of how a plugin reports one)
    tags: [example]
    function: refuse
    examples:               # plugin test checks the error's plugin code and reason
      - {input: {}, error: {code: invalid_input, reason: plugin_error}}
    input_schema: {type: object}
`},
}
