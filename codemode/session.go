package codemode

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandbank/sandbank/effect"
)

// This file is an upstream's session: started by ConnectUpstream, started
// again when it ends, within a backoff, and its tools listed again when
// the upstream says they changed.

// The restart backoff of an upstream.
const (
	// MinUpstreamRestartDelay is the wait before starting again an
	// upstream whose last session answered no call: after the first such
	// session, a start waits this long from the one before; the wait
	// doubles with each such session in a row, up to
	// MaxUpstreamRestartDelay. A session that answered a call is started
	// again at once, on the next call.
	MinUpstreamRestartDelay = 100 * time.Millisecond
	// MaxUpstreamRestartDelay is the longest wait between two starts.
	MaxUpstreamRestartDelay = 10 * time.Second
)

// upstreamSession is one session with the upstream.
type upstreamSession struct {
	cs       *mcp.ClientSession
	done     chan struct{} // closed when the session has ended; nil for NewUpstream's, never watched
	answered bool          // a call had an answer; under Upstream.mu
	// wire is what its transport observed (wire.go); nil for
	// NewUpstream's session. exact reports that the structured content
	// of its tool results arrives as exactResult wrote it.
	wire  *upstreamWire
	exact bool
}

// watchSession returns cs as an upstreamSession whose done closes when
// it ends, watched by a goroutine Close waits for. Once Close has begun,
// nothing watches it (its starter closes it).
func (u *Upstream) watchSession(cs *mcp.ClientSession) *upstreamSession {
	s := &upstreamSession{cs: cs, done: make(chan struct{})}
	u.spawn(func() {
		_ = cs.Wait()
		close(s.done)
	})
	return s
}

// spawn runs f on a goroutine Close waits for, and reports whether it
// did: not once Close has begun.
func (u *Upstream) spawn(f func()) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.closed {
		return false
	}
	u.wg.Add(1)
	go func() {
		defer u.wg.Done()
		f()
	}()
	return true
}

func (s *upstreamSession) ended() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// errDown is why a call found no session: the upstream is down and may
// not be started yet, or is closed. A host function reports it as
// UpstreamUnavailable.
var errDown = errors.New("codemode: the upstream is not available")

// ConnectUpstream starts the upstream MCP server that dial reaches (a new
// transport for each start: a command's, an address's), under name,
// lists its tools and returns them as host functions, as [NewUpstream]
// does (the same names, options and refusals). ctx bounds this first
// start; dial must not be nil.
//
// Its sessions are the Upstream's: [Upstream.Close] ends them. When one
// ends (the process exited, the HTTP session was lost), the call that
// found it ended fails with UpstreamUnavailable and the next call starts
// the upstream again, within that call's timeout; a start that fails, or
// a session that ends before it answered a call, makes the next start
// wait (MinUpstreamRestartDelay, doubling up to MaxUpstreamRestartDelay),
// and a call in that wait fails with UpstreamUnavailable without
// starting anything. A start lists the tools again. When the upstream
// sends notifications/tools/list_changed, its tools are listed again,
// and a [Host] serving it tells its watchers: an MCP server declares the
// new list in its run tools' descriptions (and tells its clients the
// tools changed).
func ConnectUpstream(ctx context.Context, name string, dial func() mcp.Transport, opts *UpstreamOptions) (*Upstream, error) {
	return connectUpstream(ctx, name, dial, opts, time.Now)
}

// connectUpstream is ConnectUpstream on the clock now (the tests' own).
func connectUpstream(ctx context.Context, name string, dial func() mcp.Transport, opts *UpstreamOptions, now func() time.Time) (*Upstream, error) {
	o, err := upstreamOptions(name, opts)
	if err != nil {
		return nil, err
	}
	if dial == nil {
		return nil, fmt.Errorf("%w: nil dial", ErrInvalidUpstream)
	}
	u := newUpstream(name, &o, now)
	u.dial = dial
	u.client = mcp.NewClient(&mcp.Implementation{Name: "sandbank", Version: "1"}, &mcp.ClientOptions{
		Logger: slog.New(slog.DiscardHandler),
		ToolListChangedHandler: func(_ context.Context, req *mcp.ToolListChangedRequest) {
			// Not on the session's reading goroutine: listing needs it.
			u.spawn(func() { u.relist(req.Session) })
		},
	})
	u.lastStart = u.now()
	sess, tools, skipped, err := u.start(ctx)
	if err != nil {
		return nil, err
	}
	u.mu.Lock() // the session's list_changed may be read already (relist)
	u.sess, u.tools, u.skipped = sess, tools, skipped
	u.mu.Unlock()
	return u, nil
}

// start connects a new session and lists its tools.
func (u *Upstream) start(ctx context.Context) (*upstreamSession, []UpstreamTool, []string, error) {
	w := &upstreamWire{spawn: u.spawn}
	t, exact := wireTransport(u.dial(), w)
	cs, err := u.client.Connect(ctx, t, nil)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("codemode: upstream %s: connecting: %s", u.name, effect.Excerpt(err.Error()))
	}
	tools, skipped, err := u.listTools(ctx, cs)
	if err != nil {
		_ = cs.Close()
		return nil, nil, nil, err
	}
	sess := u.watchSession(cs)
	sess.wire, sess.exact = w, exact
	return sess, tools, skipped, nil
}

// session returns the session in use, or starts a new one when it ended
// and the backoff allows; errDown when there is none to be had. Calls
// that find a start in progress wait for it (within ctx).
func (u *Upstream) session(ctx context.Context) (*upstreamSession, error) {
	for {
		u.mu.Lock()
		if u.closed {
			u.mu.Unlock()
			return nil, errDown
		}
		if s := u.sess; s != nil && !s.ended() {
			u.mu.Unlock()
			return s, nil
		}
		if u.sess != nil {
			u.lostLocked(u.sess)
		}
		if u.dial == nil {
			u.mu.Unlock()
			return nil, errDown // NewUpstream's session: never started again
		}
		if wait := u.starting; wait != nil {
			u.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		if u.now().Before(u.lastStart.Add(restartDelay(u.failures))) {
			u.mu.Unlock()
			return nil, errDown
		}
		started := make(chan struct{})
		u.starting = started
		u.lastStart = u.now()
		u.wg.Add(1) // Close waits for the start: its process is the upstream's
		u.mu.Unlock()

		sess, tools, skipped, err := u.startUntilClose(ctx)

		u.mu.Lock()
		u.starting = nil
		close(started)
		if err != nil || u.closed {
			u.failures++
			u.mu.Unlock()
			if err == nil { // Close came while it started
				u.closeSession(sess)
			}
			u.wg.Done()
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, errDown
		}
		u.wg.Done()
		u.sess = sess
		changed := u.setToolsLocked(tools, skipped)
		u.mu.Unlock()
		if changed {
			u.notify()
		}
		return sess, nil
	}
}

// startUntilClose is start within ctx, cancelled when Close begins.
func (u *Upstream) startUntilClose(ctx context.Context) (*upstreamSession, []UpstreamTool, []string, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(u.ctx, cancel)
	defer stop()
	return u.start(ctx)
}

// restartDelay is the wait between two starts after failures sessions
// in a row that answered no call (or did not start).
func restartDelay(failures int) time.Duration {
	if failures <= 0 {
		return 0
	}
	d := MinUpstreamRestartDelay
	for i := 1; i < failures && d < MaxUpstreamRestartDelay; i++ {
		d *= 2
	}
	return min(d, MaxUpstreamRestartDelay)
}

// lost ends sess, whose call found it gone: the next call starts a new
// one.
func (u *Upstream) lost(sess *upstreamSession) {
	if u.dial != nil {
		// Stops its process; not on the call's goroutine: closing waits
		// for the process to exit (the SDK's CommandTransport). What it
		// returns is not reported: the session was lost already, and the
		// process's exit status says so again. Once Close has begun, Close
		// closes the session in use, and one lost before has its closer.
		u.spawn(func() { _ = sess.cs.Close() })
	}
	u.mu.Lock()
	u.lostLocked(sess)
	u.mu.Unlock()
}

// lostLocked forgets sess if it is the session in use, counting it as a
// failure when it answered no call.
func (u *Upstream) lostLocked(sess *upstreamSession) {
	if u.sess != sess || u.dial == nil {
		return
	}
	u.sess = nil
	if !sess.answered {
		u.failures++
	}
}

// answered records that sess answered a call: the upstream works, and
// its next start, if any, need not wait.
func (u *Upstream) answered(sess *upstreamSession) {
	u.mu.Lock()
	sess.answered = true
	if u.sess == sess {
		u.failures = 0
	}
	u.mu.Unlock()
}

// relist lists the tools again, when the upstream's session cs said they
// changed; it is a no-op for a session no longer in use.
func (u *Upstream) relist(cs *mcp.ClientSession) {
	u.relistMu.Lock()
	defer u.relistMu.Unlock()
	u.mu.Lock()
	current := u.sess != nil && u.sess.cs == cs && !u.closed
	u.mu.Unlock()
	if !current {
		return
	}
	ctx, cancel := context.WithTimeout(u.ctx, u.timeout) // Close cancels it
	defer cancel()
	tools, skipped, err := u.listTools(ctx, cs)
	if err != nil {
		return // the list in use stays; a call finds out whether the session works
	}
	u.mu.Lock()
	changed := u.sess != nil && u.sess.cs == cs && u.setToolsLocked(tools, skipped)
	u.mu.Unlock()
	if changed {
		u.notify()
	}
}

// setToolsLocked sets the tools, and reports whether they changed.
func (u *Upstream) setToolsLocked(tools []UpstreamTool, skipped []string) bool {
	same := slices.EqualFunc(u.tools, tools, sameTool) && slices.Equal(u.skipped, skipped)
	u.tools, u.skipped = tools, skipped
	return !same
}

func sameTool(a, b UpstreamTool) bool {
	return a.Name == b.Name && a.HostName == b.HostName && a.Description == b.Description &&
		string(a.InputSchema) == string(b.InputSchema) && string(a.OutputSchema) == string(b.OutputSchema)
}

// watch calls f each time the tools change, until the returned function
// is called.
func (u *Upstream) watch(f func()) (stop func()) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.watcherID++
	id := u.watcherID
	u.watchers[id] = f
	return func() {
		u.mu.Lock()
		delete(u.watchers, id)
		u.mu.Unlock()
	}
}

// notify calls the watchers, outside u.mu.
func (u *Upstream) notify() {
	u.mu.Lock()
	fs := make([]func(), 0, len(u.watchers))
	for _, f := range u.watchers {
		fs = append(fs, f)
	}
	u.mu.Unlock()
	for _, f := range fs {
		f()
	}
}

// Close ends the upstream's session, when ConnectUpstream started it
// (NewUpstream's stays the caller's), and starts none again: later calls
// fail with UpstreamUnavailable. It cancels a start or a listing of the
// tools in progress, and waits for every goroutine the upstream started
// and every start in progress to end: when it returns, no process of the
// upstream runs. It returns what closing its sessions returned (a
// process's exit status other than zero, an HTTP session's failure to
// end). A second Close returns nil.
// Closing a process's session waits for it to exit (the SDK's
// CommandTransport).
func (u *Upstream) Close() error {
	u.mu.Lock()
	if u.closed {
		u.mu.Unlock()
		return nil
	}
	u.closed = true
	sess := u.sess
	u.mu.Unlock()
	u.cancel()
	if sess != nil && u.dial != nil {
		u.closeSession(sess)
	}
	u.wg.Wait()
	u.mu.Lock()
	defer u.mu.Unlock()
	return errors.Join(u.closeErrs...)
}

// closeSession closes sess on Close's behalf, keeping what it returns
// for Close.
func (u *Upstream) closeSession(sess *upstreamSession) {
	if err := sess.cs.Close(); err != nil {
		u.mu.Lock()
		u.closeErrs = append(u.closeErrs, fmt.Errorf("codemode: upstream %s: closing its session: %w", u.name, err))
		u.mu.Unlock()
	}
}
