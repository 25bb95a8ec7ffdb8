package codemode

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandbank/sandbank/effect"
)

// This file is code mode: the tools of another MCP server (an upstream)
// become host functions of the scripts the server runs, so that one
// script calls many tools and reshapes what they return. Every upstream
// call is a host call, and the effect's broker owns its rules (the size
// of its argument and result, the count per run, the run's wall clock and
// cancellation, the record); this file adds what only an MCP client
// knows: a per-call timeout, the mapping of the upstream's failures to
// one typed error, and the redaction of the upstream's credentials.

// The upstream defaults and fixed bounds.
const (
	// DefaultUpstreamCallTimeout bounds one upstream call when
	// UpstreamOptions.CallTimeout is zero. The run's wall clock bounds it
	// too: a call never outlives its run.
	DefaultUpstreamCallTimeout = 30 * time.Second
	// DefaultMaxUpstreamTools bounds the tools taken from one upstream
	// when UpstreamOptions.MaxTools is zero.
	DefaultMaxUpstreamTools = 256
	// MaxUpstreamNameBytes is the longest name an upstream may have.
	MaxUpstreamNameBytes = 32
	// MinRedactBytes is the shortest text UpstreamOptions.Redact
	// redacts.
	MinRedactBytes = 8
)

// ErrInvalidUpstream is matched by every error NewUpstream returns for
// arguments it refuses (a malformed name, a nil session, negative
// options). It matches effect.ErrInvalidCall: not retryable.
var ErrInvalidUpstream = fmt.Errorf("codemode: invalid upstream: %w", effect.ErrInvalidCall)

// UpstreamOptions configure an Upstream. A nil *UpstreamOptions means
// defaults.
type UpstreamOptions struct {
	// CallTimeout bounds one call of an upstream tool; a call that gets
	// no answer within it fails with UpstreamTimeout (and the upstream is
	// told the call is cancelled). Zero means DefaultUpstreamCallTimeout;
	// it must be >= 0.
	CallTimeout time.Duration
	// MaxTools bounds the tools taken from the upstream's list (in the
	// order it lists them). Zero means DefaultMaxUpstreamTools; it must
	// be >= 0.
	MaxTools int
	// Redact lists texts the script must never see: the credentials the
	// upstream was given (a token in its environment, an Authorization
	// header). Each is replaced by "[redacted]" in every result and error
	// text an upstream call hands the script. Texts shorter than
	// MinRedactBytes are ignored: they are no credential, and replacing
	// them would mangle the answers.
	Redact []string
}

// Upstream is an MCP server whose tools a script may call as host
// functions: tool T of upstream N is the host function N__T (see
// [UpstreamTool]). Build it with [ConnectUpstream], which starts the
// upstream and starts it again when it dies, or [NewUpstream] from a
// client session of your own; serve it with others through a [Host]
// (mcpserver.Options.Host), or give its [Upstream.HostFuncs] to an effect.Call
// (or effect.Options.Host) of your own. It is safe for concurrent use:
// calls may be in flight at once.
type Upstream struct {
	name     string
	timeout  time.Duration
	redact   []string
	maxTools int
	// dial returns a new transport to the upstream for each start
	// (ConnectUpstream); nil for NewUpstream's session, which is never
	// started again. client is the MCP client of those starts.
	dial   func() mcp.Transport
	client *mcp.Client
	now    func() time.Time // the clock of the restart backoff

	// ctx ends when Close begins: it cancels a start or a listing in
	// progress. wg counts the goroutines the upstream started (spawn) and
	// the starts in progress; Close waits for them.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu        sync.Mutex
	sess      *upstreamSession // the session in use; nil while down
	starting  chan struct{}    // closed when the start in progress ends; nil without one
	failures  int              // sessions in a row that answered no call (session.go)
	lastStart time.Time
	closed    bool
	closeErrs []error        // what closing sessions returned, for Close
	tools     []UpstreamTool // sorted by HostName
	skipped   []string       // the upstream's names of the tools left out
	watchers  map[int]func() // called when the tools change (Host)
	watcherID int
	relistMu  sync.Mutex // one listing of the tools at a time
}

// UpstreamTool is one tool of an upstream, as a script calls it.
type UpstreamTool struct {
	// Name is the tool's name at the upstream.
	Name string
	// HostName is the host function a script calls: the upstream's name,
	// two underscores, and the tool's name with every byte other than an
	// ASCII letter, digit or underscore replaced by an underscore
	// (github's "search-issues" is github__search_issues).
	HostName string
	// Description is the upstream's description of the tool, as it sent
	// it.
	Description string
	// InputSchema and OutputSchema are the tool's JSON Schemas as the
	// upstream sent them; OutputSchema is nil when it declares none.
	InputSchema, OutputSchema json.RawMessage
}

// NewUpstream lists the tools of the upstream MCP server connected to
// session, under name, and returns them as host functions. name is 1 to
// MaxUpstreamNameBytes ASCII letters, digits and underscores, starting
// with a letter, not ending with an underscore, without two underscores
// in a row (so that a host name says where its upstream's name ends). A tool whose host name would be
// longer than effect.MaxHostNameBytes, or the same as an earlier tool's,
// is left out (see [Upstream.Skipped]). Refusals match
// ErrInvalidUpstream; a failure to list the tools is returned as the
// session's error.
//
// The session stays the caller's: Close it when done. It is never
// started again: once it ends, every call fails with
// UpstreamUnavailable; and the tools are listed once. [ConnectUpstream]
// restarts its upstream and follows its tools/list_changed.
func NewUpstream(ctx context.Context, name string, session *mcp.ClientSession, opts *UpstreamOptions) (*Upstream, error) {
	o, err := upstreamOptions(name, opts)
	if err != nil {
		return nil, err
	}
	if session == nil {
		return nil, fmt.Errorf("%w: nil session", ErrInvalidUpstream)
	}
	u := newUpstream(name, &o, time.Now)
	tools, skipped, err := u.listTools(ctx, session)
	if err != nil {
		return nil, err
	}
	u.tools, u.skipped = tools, skipped
	// The session is the caller's: nothing watches for its end (a call
	// that finds it ended fails with UpstreamUnavailable).
	u.sess, u.lastStart = &upstreamSession{cs: session}, u.now()
	return u, nil
}

// newUpstream returns an upstream with o's settings and no session.
func newUpstream(name string, o *UpstreamOptions, now func() time.Time) *Upstream {
	ctx, cancel := context.WithCancel(context.Background())
	u := &Upstream{
		ctx:      ctx,
		cancel:   cancel,
		name:     name,
		timeout:  cmp.Or(o.CallTimeout, DefaultUpstreamCallTimeout),
		maxTools: cmp.Or(o.MaxTools, DefaultMaxUpstreamTools),
		now:      now,
		watchers: map[int]func(){},
	}
	for _, s := range o.Redact {
		if len(s) >= MinRedactBytes {
			u.redact = append(u.redact, s)
		}
	}
	return u
}

// upstreamOptions checks NewUpstream's and ConnectUpstream's name and
// options, and returns the options (nil means defaults).
func upstreamOptions(name string, opts *UpstreamOptions) (UpstreamOptions, error) {
	var o UpstreamOptions
	if opts != nil {
		o = *opts
	}
	if err := CheckUpstreamName(name); err != nil {
		return o, err
	}
	switch {
	case o.CallTimeout < 0:
		return o, fmt.Errorf("%w: negative CallTimeout", ErrInvalidUpstream)
	case o.MaxTools < 0:
		return o, fmt.Errorf("%w: negative MaxTools", ErrInvalidUpstream)
	}
	return o, nil
}

// listTools lists the tools of the upstream connected to session, as
// NewUpstream takes them.
func (u *Upstream) listTools(ctx context.Context, session *mcp.ClientSession) (tools []UpstreamTool, skipped []string, err error) {
	seen := map[string]bool{}
	for tool, err := range session.Tools(ctx, nil) {
		if err != nil {
			return nil, nil, fmt.Errorf("codemode: upstream %s: listing its tools: %s", u.name, effect.Excerpt(err.Error()))
		}
		if len(tools)+len(skipped) >= u.maxTools {
			break
		}
		host := u.name + "__" + hostSafe(tool.Name)
		if len(host) > effect.MaxHostNameBytes || seen[host] || tool.Name == "" {
			skipped = append(skipped, tool.Name)
			continue
		}
		seen[host] = true
		tools = append(tools, UpstreamTool{
			Name:         tool.Name,
			HostName:     host,
			Description:  tool.Description,
			InputSchema:  schemaText(tool.InputSchema),
			OutputSchema: schemaText(tool.OutputSchema),
		})
	}
	slices.SortFunc(tools, func(a, b UpstreamTool) int { return strings.Compare(a.HostName, b.HostName) })
	return tools, skipped, nil
}

// Name is the upstream's name, the prefix of its host functions.
func (u *Upstream) Name() string { return u.name }

// Tools are the upstream's tools a script may call, sorted by HostName:
// the latest list, when the upstream said its tools changed or was
// started again.
func (u *Upstream) Tools() []UpstreamTool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return slices.Clone(u.tools)
}

// Skipped are the upstream's names of the tools left out: a host name
// too long, or the same as another tool's.
func (u *Upstream) Skipped() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return slices.Clone(u.skipped)
}

// HostFuncs returns the upstream's tools as host functions, one per tool,
// named by UpstreamTool.HostName. Each takes one JSON object (null, or no
// argument, is {}), calls the tool with it, and returns what the tool
// answered: its structured content when it has some; else its text when
// every content item is text (the items' texts joined by newlines); else
// its content items as MCP sends them. A failure is an *UpstreamError,
// which the effect throws into the script (see UpstreamCode); when the
// run itself ends first, the run's context error, and the effect ends
// the run as it ends any run.
func (u *Upstream) HostFuncs() effect.HostFuncs {
	tools := u.Tools()
	fns := make(effect.HostFuncs, len(tools))
	for _, t := range tools {
		fns[t.HostName] = u.hostFunc(t)
	}
	return fns
}

func (u *Upstream) hostFunc(t UpstreamTool) effect.HostFunc {
	return func(ctx context.Context, args json.RawMessage) (any, error) {
		fail := func(code UpstreamCode, detail string) error {
			return &UpstreamError{Upstream: u.name, Tool: t.Name, Code: code, Detail: u.scrub(detail)}
		}
		arguments, ok := objectArguments(args)
		if !ok {
			return nil, fail(UpstreamInvalidArguments, "")
		}
		cctx, cancel := context.WithTimeout(ctx, u.timeout)
		defer cancel()
		// The session in use, or a new one when it ended (and the
		// backoff allows a start: session.go).
		sess, err := u.session(cctx)
		var res *mcp.CallToolResult
		if err == nil {
			res, err = sess.cs.CallTool(cctx, &mcp.CallToolParams{Name: t.Name, Arguments: arguments})
		}
		switch {
		case ctx.Err() != nil:
			// The run ended (its wall clock, its caller, its end): the
			// effect decides what the script sees, if anything.
			return nil, ctx.Err()
		case err != nil && sess != nil && sess.wire.overflowed():
			// An answer over MaxUpstreamMessageBytes ended the session:
			// the upstream works, and its next call starts another.
			u.answered(sess)
			u.lost(sess)
			return nil, fail(UpstreamTooLarge, "")
		case err != nil && cctx.Err() != nil:
			return nil, fail(UpstreamTimeout, "")
		case err != nil && sess == nil:
			return nil, fail(UpstreamUnavailable, "") // down, or closed
		case err != nil:
			code, detail := classify(sess, err)
			if code == UpstreamUnavailable {
				u.lost(sess) // the next call starts it again
			} else {
				u.answered(sess)
			}
			return nil, fail(code, detail)
		}
		u.answered(sess)
		switch {
		case res == nil:
			return nil, fail(UpstreamMalformed, "")
		case res.IsError:
			return nil, fail(UpstreamToolError, toolText(res))
		}
		v, err := resultValue(res, sess.exact)
		if err != nil {
			return nil, fail(UpstreamMalformed, "")
		}
		return u.redactJSON(v), nil
	}
}

// objectArguments returns args as a tool's arguments: a JSON object, or
// {} for null.
func objectArguments(args json.RawMessage) (json.RawMessage, bool) {
	s := strings.TrimSpace(string(args))
	switch {
	case s == "" || s == "null":
		return json.RawMessage("{}"), true
	case s[0] == '{':
		return args, true
	}
	return nil, false
}

// classify maps the error of a call that did not time out to its code,
// with the upstream's own text when it answered with a JSON-RPC error.
// The SDK's and the transport's texts are never passed on: they may name
// an address or a header.
func classify(sess *upstreamSession, err error) (UpstreamCode, string) {
	if sess.ended() {
		return UpstreamUnavailable, ""
	}
	var wire *jsonrpc.Error
	var netErr net.Error
	switch {
	case errors.Is(err, mcp.ErrConnectionClosed), errors.Is(err, mcp.ErrSessionMissing),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.As(err, &netErr):
		return UpstreamUnavailable, ""
	case errors.As(err, &wire):
		switch wire.Code {
		case -32003, -32004: // the SDK's "client is closing", "server is closing"
			return UpstreamUnavailable, ""
		case jsonrpc.CodeParseError, jsonrpc.CodeInvalidRequest:
			return UpstreamMalformed, ""
		}
		return UpstreamRefused, wire.Message
	}
	return UpstreamMalformed, ""
}

// toolText is the text of a tool's error result.
func toolText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// resultValue is what a tool's result is to the script (see HostFuncs).
// exact reports that its structured content, when it is a string, is the
// text the upstream sent (exactResult): numbers stay as they were
// written, never rounded through a float64.
func resultValue(res *mcp.CallToolResult, exact bool) (json.RawMessage, error) {
	if s, ok := res.StructuredContent.(string); ok && exact {
		if !json.Valid([]byte(s)) {
			return nil, errors.New("codemode: structured content that is not JSON")
		}
		return json.RawMessage(s), nil
	}
	if res.StructuredContent != nil {
		return json.Marshal(res.StructuredContent)
	}
	if res.Content == nil {
		return json.Marshal("")
	}
	var texts []string
	for _, c := range res.Content {
		t, ok := c.(*mcp.TextContent)
		if !ok {
			return json.Marshal(res.Content)
		}
		texts = append(texts, t.Text)
	}
	return json.Marshal(strings.Join(texts, "\n"))
}

// scrub makes an upstream's text fit for an error message: redacted, one
// excerpt (effect.Excerpt: bounded, control characters replaced).
func (u *Upstream) scrub(s string) string {
	if s == "" {
		return ""
	}
	return effect.Excerpt(u.redactText(s))
}

func (u *Upstream) redactText(s string) string {
	for _, r := range u.redact {
		s = strings.ReplaceAll(s, r, redacted)
	}
	return s
}

const redacted = "[redacted]"

// redactJSON replaces the redacted texts in every string (and key) of a
// JSON value. It decodes and encodes again only when one of them occurs.
func (u *Upstream) redactJSON(v json.RawMessage) json.RawMessage {
	if len(u.redact) == 0 {
		return v
	}
	var x any
	dec := json.NewDecoder(strings.NewReader(string(v)))
	dec.UseNumber()
	if err := dec.Decode(&x); err != nil {
		return v // the effect refuses it; nothing of it reaches the script
	}
	if !u.walkRedact(&x) {
		return v
	}
	out, err := json.Marshal(x)
	if err != nil {
		return v
	}
	return out
}

// walkRedact redacts x in place and reports whether it changed.
func (u *Upstream) walkRedact(x *any) bool {
	changed := false
	switch v := (*x).(type) {
	case string:
		if r := u.redactText(v); r != v {
			*x, changed = r, true
		}
	case []any:
		for i := range v {
			if u.walkRedact(&v[i]) {
				changed = true
			}
		}
	case map[string]any:
		for k, e := range v {
			c := u.walkRedact(&e)
			if rk := u.redactText(k); rk != k {
				delete(v, k)
				k, c = rk, true
			}
			if c {
				v[k], changed = e, true
			}
		}
	}
	return changed
}

// schemaText is a tool's schema as JSON text, or nil.
func schemaText(s any) json.RawMessage {
	if s == nil {
		return nil
	}
	b, err := json.Marshal(s)
	if err != nil || string(b) == "null" {
		return nil
	}
	return b
}

// hostSafe replaces every byte of a tool name that a host name may not
// hold with an underscore.
func hostSafe(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			b[i] = '_'
		}
	}
	return string(b)
}

// CheckUpstreamName returns nil when name may name an upstream (see
// NewUpstream), and an error matching ErrInvalidUpstream otherwise.
func CheckUpstreamName(name string) error {
	if !validUpstreamName(name) {
		return fmt.Errorf("%w: a name must be 1 to %d ASCII letters, digits or underscores, start with a letter, and have no underscore at its end nor two in a row", ErrInvalidUpstream, MaxUpstreamNameBytes)
	}
	return nil
}

func validUpstreamName(s string) bool {
	if s == "" || len(s) > MaxUpstreamNameBytes || strings.Contains(s, "__") || strings.HasSuffix(s, "_") {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case i > 0 && (c == '_' || '0' <= c && c <= '9'):
		default:
			return false
		}
	}
	return true
}

// UpstreamCode says how an upstream call failed. The zero value is
// invalid; codes are never renumbered.
type UpstreamCode int

const (
	// UpstreamUnavailable: the upstream is gone (its process exited, its
	// connection closed or its address does not answer).
	UpstreamUnavailable UpstreamCode = iota + 1
	// UpstreamTimeout: no answer within the call timeout.
	UpstreamTimeout
	// UpstreamMalformed: the upstream answered with something that is
	// not a tool result.
	UpstreamMalformed
	// UpstreamRefused: the upstream refused the call with a JSON-RPC
	// error (an unknown tool, invalid arguments); Detail is its message.
	UpstreamRefused
	// UpstreamToolError: the tool ran and reported an error (isError);
	// Detail is its text.
	UpstreamToolError
	// UpstreamInvalidArguments: the script's argument is not a JSON
	// object (or null).
	UpstreamInvalidArguments
	// UpstreamTooLarge: the upstream's answer is longer than
	// MaxUpstreamMessageBytes; it was not read further.
	UpstreamTooLarge
)

var upstreamCodeNames = [...]string{
	UpstreamUnavailable:      "upstreamUnavailable",
	UpstreamTimeout:          "upstreamTimeout",
	UpstreamMalformed:        "upstreamMalformed",
	UpstreamRefused:          "upstreamRefused",
	UpstreamToolError:        "upstreamToolError",
	UpstreamInvalidArguments: "upstreamInvalidArguments",
	UpstreamTooLarge:         "upstreamTooLarge",
}

// String returns the code's name, such as "upstreamTimeout".
func (c UpstreamCode) String() string {
	if c < UpstreamUnavailable || int(c) >= len(upstreamCodeNames) {
		return "UpstreamCode(" + strconv.Itoa(int(c)) + ")"
	}
	return upstreamCodeNames[c]
}

// upstreamCodeTexts say what each code means, in an error's message.
var upstreamCodeTexts = [...]string{
	UpstreamUnavailable:      "the upstream is not available",
	UpstreamTimeout:          "the upstream did not answer in time",
	UpstreamMalformed:        "the upstream's answer is not a tool result",
	UpstreamRefused:          "the upstream refused the call",
	UpstreamToolError:        "the tool reported an error",
	UpstreamInvalidArguments: "the argument must be a JSON object",
	UpstreamTooLarge:         "the upstream's answer is over the bound on an upstream message (MaxUpstreamMessageBytes)",
}

// errorPrefix begins an UpstreamError's message. It is the name of the
// package code mode was born in, not this one's: scripts and models
// match "mcpserver: CODE:" (docs/code-mode.md), and the text a script
// catches does not change when a package moves.
const errorPrefix = "mcpserver: "

// UpstreamError is a failed upstream call. The effect throws it into the
// script as an Error whose message is
//
//	mcpserver: CODE: UPSTREAM.TOOL: what happened[: the upstream's text]
//
// such as "mcpserver: upstreamTimeout: github.search_issues: the upstream
// did not answer in time", so a script catches it and reads its code.
// The upstream's text is cut to an excerpt (effect.Excerpt) with its
// credentials redacted; the SDK's and the transport's own texts are never
// part of it.
//
// Its kind (effect.KindOf) says whether the same call may do better
// later: upstreamUnavailable (the upstream is down, or restarting: see
// ConnectUpstream), upstreamTimeout and upstreamMalformed are
// infrastructure, retryable; upstreamRefused, upstreamToolError,
// upstreamInvalidArguments and upstreamTooLarge match
// effect.ErrInvalidCall: the same call fails the same way. A run whose script lets one escape ends as the
// script's typed failure (scriptError), never retryable, whatever its
// code.
type UpstreamError struct {
	Upstream string
	Tool     string
	Code     UpstreamCode
	Detail   string
}

// Unwrap returns effect.ErrInvalidCall for the codes whose call fails
// the same way every time, and nil for the others (see UpstreamError).
func (e *UpstreamError) Unwrap() error {
	switch e.Code {
	case UpstreamRefused, UpstreamToolError, UpstreamInvalidArguments, UpstreamTooLarge:
		return effect.ErrInvalidCall
	}
	return nil
}

func (e *UpstreamError) Error() string {
	what := "the upstream call failed"
	if e.Code >= UpstreamUnavailable && int(e.Code) < len(upstreamCodeTexts) {
		what = upstreamCodeTexts[e.Code]
	}
	msg := errorPrefix + e.Code.String() + ": " + e.Upstream + "." + effect.Excerpt(e.Tool) + ": " + what
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	return msg
}
