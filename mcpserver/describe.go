package mcpserver

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/dustin/go-humanize"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandbank/sandbank/spi"
)

// The tools' descriptions are written for the model that calls them: what
// the script sees, how it returns a value, what it cannot do, the limits,
// and what a failure looks like. They are built from the engine's declared
// capabilities and the server's limits, so they never promise more than
// the engine declares.

// contracts is each language's script contract, as a model needs it.
var contracts = map[string]string{
	"javascript": `Run a JavaScript program in a sandbox and get its result back as JSON.

How to write the script:
- The input is the global variable ` + "`input`" + ` (the "input" argument, already parsed; null when left out).
- The result is the script's completion value: the value of its LAST EXPRESSION STATEMENT, not a ` + "`return`" + `. End the script with the value, e.g. ` + "`({ sum: input.a + input.b })`" + ` or ` + "`result;`" + `. A top-level ` + "`return`" + ` is a syntax error.
- Promises are awaited and top-level ` + "`await`" + ` works.
- The result must be JSON: objects, arrays, strings, numbers, booleans, null. undefined, functions, symbols and BigInts are errors.
- Only the ECMAScript standard library is there: no require or import, no fetch or network, no file system, no process, no setTimeout. Date is a fake clock starting at 2000-01-01T00:00:00Z and Math.random is deterministic.`,
	"typescript": `Run a TypeScript program in a sandbox and get its result back as JSON.

How to write the script:
- The input is the global variable ` + "`input`" + ` (the "input" argument, already parsed; null when left out); declare its type with a cast, e.g. ` + "`const rows = input as { n: number }[];`" + `.
- The result is the script's completion value: the value of its LAST EXPRESSION STATEMENT, not a ` + "`return`" + `. End the script with the value, e.g. ` + "`rows.map(r => r.n * 2)`" + `.
- Types are stripped, not checked: a type error does not stop the script. import and export are refused.
- Promises are awaited and top-level ` + "`await`" + ` works.
- The result must be JSON: objects, arrays, strings, numbers, booleans, null. undefined, functions, symbols and BigInts are errors.
- Only the ECMAScript standard library is there: no require or import, no fetch or network, no file system, no process, no setTimeout. Date is a fake clock starting at 2000-01-01T00:00:00Z and Math.random is deterministic.`,
	"python": `Run a Python 3 program (CPython with its standard library) in a sandbox and get its result back as JSON.

How to write the script:
- The input is the global variable ` + "`input`" + ` (the "input" argument, already parsed: dicts, lists, str, int, float, bool, None; None when left out).
- The result is the value of the script's LAST EXPRESSION STATEMENT, as in a notebook cell: end the script with the value, e.g. ` + "`{\"sum\": input[\"a\"] + input[\"b\"]}`" + `. A script that ends otherwise returns None. A top-level ` + "`return`" + ` is a syntax error.
- Top-level ` + "`await`" + ` works, and a coroutine as the last value is awaited.
- The result must be JSON: dicts with string keys, lists, tuples, str, int (any size), float, bool, None. NaN, infinities, sets and bytes are errors.
- The whole standard library is there (json, re, datetime, collections, statistics, itertools, …); no network, no processes, no host files; /tmp is a small private scratch directory. time and datetime read a fake clock starting at 2000-01-01T00:00:00Z (time.sleep advances it without waiting) and random is seeded: runs are deterministic.`,
	"starlark": `Run a Starlark program (a small, deterministic dialect of Python) in a sandbox and get its result back as JSON.

How to write the script:
- Define ` + "`def main(input):`" + ` and return the result from it; main is called with the "input" argument, parsed (dicts, lists, strings, ints, floats, True/False, None; null when left out).
- Example:
      def main(input):
          return {"sum": input["a"] + input["b"]}
- The result must be JSON: dicts with string keys, lists, tuples, strings, numbers, booleans, None.
- Starlark is not full Python: no while loops, no recursion, no classes, no exceptions (` + "`fail(msg)`" + ` stops the script with an error), no top-level if or for (put code in functions), no imports or load. The modules json and math are there; nothing else (no time, no randomness, no files, no network).`,
}

// printing says what happens to what a script prints, by declaration.
func printing(lang string, caps spi.Capabilities) string {
	what := "console.log and its kin"
	switch lang {
	case "starlark":
		what = "print"
	case "python":
		what = "print, sys.stderr and logging"
	}
	if caps.Logs {
		return "- " + what + " lines come back in the result's logs (bounded); the result itself is still the completion value."
	}
	return "- What " + what + " prints is discarded: put everything you want to see in the result."
}

// limitLines describes the limits of a tool's runs, by declaration.
func limitLines(caps spi.Capabilities, lim limits) string {
	var b strings.Builder
	b.WriteString("\nLimits of every run (the optional \"limits\" argument may only lower them):\n")
	switch caps.WallClock {
	case spi.WallClockHard:
		fmt.Fprintf(&b, "- Wall clock %s (limits.timeoutMs): the script is stopped when it runs out.\n", lim.wallClock)
	default:
		fmt.Fprintf(&b, "- Wall clock %s (limits.timeoutMs): checked between steps, so the script is stopped at the next step after it runs out.\n", lim.wallClock)
	}
	if caps.Memory {
		fmt.Fprintf(&b, "- Memory %s (limits.memoryBytes), enforced.\n", humanize.IBytes(uint64(lim.memoryBytes)))
	} else {
		b.WriteString("- Memory: this engine does not bound memory; keep values small.\n")
	}
	if caps.CPU {
		b.WriteString("- A CPU budget: a script that computes too long runs out of it.\n")
	}
	fmt.Fprintf(&b, "- Script at most %s, input at most %s of JSON, result at most %s of JSON.\n",
		humanize.IBytes(uint64(lim.maxScript)), humanize.IBytes(uint64(lim.maxInput)), humanize.IBytes(uint64(lim.maxOutput)))
	b.WriteString("- Each run starts fresh: nothing survives from one call to the next.\n")
	return b.String()
}

const failureLines = `
The result: on success, the value (as JSON text, and as structuredContent.value), the logs and the run's stats.
On failure the tool result is an error (isError) naming the failure, with a hint: scriptError (the script threw or did not compile: its name and message, with the line), limitExceeded (kind wallClock, memory, cpu or output), inputTooLarge, scriptTooLarge. Fix the script and call again.`

// description is a run tool's description.
func (t *runTool) description() string {
	caps := t.entry.Capabilities
	return contracts[t.lang] + "\n" + printing(t.lang, caps) + "\n" + limitLines(caps, t.s.limits) + failureLines +
		"\nEngine: " + t.entry.Engine + " (list_engines tells more)." + t.s.hostSection(t.lang, caps) + t.s.suspendSection(caps)
}

// definition is the run tool as tools/list shows it.
func (t *runTool) definition() *mcp.Tool {
	return &mcp.Tool{
		Name:         t.name,
		Title:        "Run " + languageTitle(t.lang) + " in a sandbox",
		Description:  t.description(),
		InputSchema:  inputSchema(t.lang, t.s.limits),
		OutputSchema: json.RawMessage(outputSchema),
		Annotations: &mcp.ToolAnnotations{
			Title:           "Run " + languageTitle(t.lang),
			ReadOnlyHint:    true,
			IdempotentHint:  true,
			DestructiveHint: ptr(false),
			OpenWorldHint:   ptr(false),
		},
	}
}

func ptr[T any](v T) *T { return &v }

func languageTitle(lang string) string {
	switch lang {
	case "javascript":
		return "JavaScript"
	case "typescript":
		return "TypeScript"
	case "starlark":
		return "Starlark"
	case "python":
		return "Python"
	}
	return lang
}

// inputSchema is a run tool's input schema, with the server's ceilings as
// the limits' maxima.
func inputSchema(lang string, lim limits) json.RawMessage {
	script := "The program's source text, in " + languageTitle(lang) + "."
	schema := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"script": map[string]any{"type": "string", "description": script},
			"input":  map[string]any{"description": "Any JSON value: the script's input. Null when left out."},
			"limits": map[string]any{
				"type":        "object",
				"description": "Optional: lower limits for this run. They may only lower the server's.",
				"properties": map[string]any{
					"timeoutMs": map[string]any{
						"type": "integer", "minimum": 1, "maximum": lim.wallClock.Milliseconds(),
						"description": fmt.Sprintf("Wall-clock limit in milliseconds (the server's: %d).", lim.wallClock.Milliseconds()),
					},
					"memoryBytes": map[string]any{
						"type": "integer", "minimum": 1, "maximum": lim.memoryBytes,
						"description": fmt.Sprintf("Memory limit in bytes (the server's: %d).", lim.memoryBytes),
					},
				},
				"additionalProperties": false,
			},
		},
		"required":             []string{"script"},
		"additionalProperties": false,
	}
	b, err := json.Marshal(schema)
	if err != nil {
		panic(err) // a fixed map of strings and numbers always marshals
	}
	return b
}

// outputSchema is the JSON Schema of Result.
const outputSchema = `{
  "type": "object",
  "properties": {
    "ok": {"type": "boolean", "description": "true when the script returned a value"},
    "value": {"description": "the script's result"},
    "failure": {
      "type": "object",
      "description": "the script's typed failure",
      "properties": {
        "code": {"type": "string", "enum": ["inputNotSerializable", "inputTooLarge", "scriptMissing", "limitExceeded", "scriptError", "shapeMismatch", "scriptTooLarge", "suspended", "replayDiverged"]},
        "kind": {"type": "string"},
        "name": {"type": "string"},
        "message": {"type": "string"},
        "reason": {"type": "string"}
      },
      "required": ["code"]
    },
    "invalidCall": {"type": "string", "description": "what was wrong with the arguments; the script did not run"},
    "hint": {"type": "string", "description": "what to do about the failure"},
    "logs": {"type": "array", "items": {"type": "object"}},
    "logsCut": {"type": "object"},
    "stats": {"type": "object"},
    "engine": {"type": "string"},
    "receipt": {"type": "object"},
    "run": {"type": "string"},
    "waiting": {"type": "object", "description": "set when the run suspended: the host call it waits at (run, name, args); resume_run continues it"}
  },
  "required": ["ok", "logs", "engine"]
}`

// instructions are the server's instructions to the model.
func instructions(tools []*runTool, host Host) string {
	var names []string
	for _, t := range tools {
		names = append(names, t.name)
	}
	return "Sandbank runs programs you write in a sandbox with hard limits and returns their result as JSON. " +
		"Use " + strings.Join(names, ", ") + " to compute, transform or check data exactly instead of by hand: " +
		"pass the data as the \"input\" argument and read the result. Scripts have no network, no files and no clock; " +
		"each run starts fresh. A failed run is an error result with the failure and a hint: fix the script and call again. " +
		"list_engines shows the engines and their limits." + hostInstructions(host)
}

// hostSection is the part of a run tool's description about the host
// functions (Options.Host); empty without.
func (s *Server) hostSection(lang string, caps spi.Capabilities) string {
	switch {
	case s.host == nil:
		return ""
	case !caps.HostCalls:
		return "\n\nThis engine cannot call the host tools (it declares no host calls)."
	}
	return "\n\n" + s.host.Describe(lang)
}

// hostInstructions is the host's sentence of the server's instructions.
func hostInstructions(host Host) string {
	if host == nil {
		return ""
	}
	if s := host.Instructions(); s != "" {
		return " " + s
	}
	return ""
}
