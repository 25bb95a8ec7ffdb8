package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandbank/sandbank/codemode"
	"github.com/sandbank/sandbank/effect"
)

// This file is 'sandbank mcp --upstream': the operator names other MCP
// servers (a command run over standard input and output, or a
// streamable-HTTP address on an allow-list), and their tools become host
// functions of the scripts the server runs (package codemode).

// upstreamConnectBound bounds starting an upstream: its process or its
// address, the MCP handshake and the list of its tools.
const upstreamConnectBound = 30 * time.Second

// upstreamSpec is one --upstream, with its --upstream-env and
// --upstream-header.
type upstreamSpec struct {
	name    string
	command []string // a command run over stdio, or nil
	url     string   // a streamable-HTTP address, or ""
	env     []string // KEY=VALUE added to the command's environment
	headers http.Header
	redact  []string // the values of env and headers: credentials
}

// parseUpstreams checks the --upstream flags.
func parseUpstreams(o *mcpOptions) ([]*upstreamSpec, error) {
	if len(o.upstreams) == 0 {
		switch {
		case len(o.upstreamEnv) > 0:
			return nil, usagef("--upstream-env is for an --upstream")
		case len(o.upstreamHeaders) > 0:
			return nil, usagef("--upstream-header is for an --upstream")
		case len(o.upstreamAllow) > 0:
			return nil, usagef("--upstream-allow is for an --upstream")
		}
		return nil, nil
	}
	allowed := map[string]bool{}
	for _, origin := range o.upstreamAllow {
		u, err := url.Parse(origin)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil {
			return nil, usagef("--upstream-allow %s: want SCHEME://HOST[:PORT], such as https://mcp.example.com", quote(origin))
		}
		allowed[u.Scheme+"://"+u.Host] = true
	}
	specs := map[string]*upstreamSpec{}
	var order []*upstreamSpec
	for _, arg := range o.upstreams {
		name, target, ok := strings.Cut(arg, "=")
		if !ok || strings.TrimSpace(target) == "" {
			return nil, usagef("--upstream %s: want NAME=COMMAND or NAME=https://ADDRESS", quote(arg))
		}
		if err := codemode.CheckUpstreamName(name); err != nil {
			return nil, usagef("--upstream %s: %v", quote(name), err)
		}
		if specs[name] != nil {
			return nil, usagef("--upstream: two upstreams are named %s", quote(name))
		}
		s := &upstreamSpec{name: name, headers: http.Header{}}
		if strings.HasPrefix(target, "http://") || strings.HasPrefix(target, "https://") {
			u, err := url.Parse(target)
			if err != nil || u.Host == "" {
				return nil, usagef("--upstream %s: not a URL", quote(name))
			}
			if !allowed[u.Scheme+"://"+u.Host] && !loopbackHost(u.Hostname()) {
				return nil, usagef("--upstream %s: %s is neither on loopback nor allowed (--upstream-allow %s://%s)", quote(name), quote(u.Scheme+"://"+u.Host), u.Scheme, u.Host)
			}
			s.url = target
		} else {
			words, err := splitCommand(target)
			if err != nil {
				return nil, usagef("--upstream %s: %v", quote(name), err)
			}
			s.command = words
		}
		specs[name] = s
		order = append(order, s)
	}
	for _, arg := range o.upstreamEnv {
		name, kv, _ := strings.Cut(arg, "=")
		key, value, ok := strings.Cut(kv, "=")
		s := specs[name]
		switch {
		case !ok || key == "":
			return nil, usagef("--upstream-env: want NAME=KEY=VALUE")
		case s == nil:
			return nil, usagef("--upstream-env: no --upstream is named %s", quote(name))
		case s.command == nil:
			return nil, usagef("--upstream-env: upstream %s is an address, not a command", quote(name))
		}
		s.env = append(s.env, key+"="+value)
		s.redact = append(s.redact, value)
	}
	for _, arg := range o.upstreamHeaders {
		name, header, _ := strings.Cut(arg, "=")
		key, value, ok := strings.Cut(header, ":")
		key, value = strings.TrimSpace(key), strings.TrimSpace(os.ExpandEnv(value))
		s := specs[name]
		switch {
		case !ok || key == "":
			return nil, usagef("--upstream-header: want NAME=HEADER: VALUE")
		case s == nil:
			return nil, usagef("--upstream-header: no --upstream is named %s", quote(name))
		case s.url == "":
			return nil, usagef("--upstream-header: upstream %s is a command, not an address", quote(name))
		}
		s.headers.Add(key, value)
		// The value, and each of its words: "Bearer TOKEN" is redacted
		// where the upstream echoes the token alone too.
		s.redact = append(s.redact, value)
		s.redact = append(s.redact, strings.Fields(value)...)
	}
	return order, nil
}

// loopbackHost reports whether host is a loopback address or localhost.
func loopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// splitCommand splits a command line into words at spaces, keeping what
// single or double quotes enclose together; nothing else is interpreted.
func splitCommand(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	var q rune // the open quote, or 0
	for _, r := range s {
		switch {
		case q != 0 && r == q:
			q = 0
		case q != 0:
			cur.WriteRune(r)
		case r == '\'' || r == '"':
			q, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if q != 0 {
		return nil, errors.New("an unclosed quote")
	}
	if inWord {
		words = append(words, cur.String())
	}
	if len(words) == 0 {
		return nil, errors.New("no command")
	}
	return words, nil
}

// connectUpstreams starts every upstream and lists its tools
// (codemode.ConnectUpstream: an upstream that dies is started again on
// a later call), served together (codemode.NewHost). closeAll ends their
// sessions (and stops their processes), and returns what failed.
func (a *app) connectUpstreams(ctx context.Context, specs []*upstreamSpec, o *mcpOptions, logger *slog.Logger) (host *codemode.Host, closeAll func() error, err error) {
	var started []*codemode.Upstream
	closeAll = func() error {
		var errs []error
		for _, u := range started {
			errs = append(errs, u.Close())
		}
		return errors.Join(errs...)
	}
	defer func() {
		if err != nil {
			_ = closeAll() // the error said why; a failure to close adds nothing
		}
	}()
	var timeout time.Duration
	if o.upstreamTimeout != "" {
		d, perr := time.ParseDuration(o.upstreamTimeout)
		if perr != nil || d <= 0 {
			return nil, closeAll, usagef("--upstream-timeout: invalid duration %s (want a positive duration such as 30s)", quote(o.upstreamTimeout))
		}
		timeout = d
	}
	for _, s := range specs {
		cctx, cancel := context.WithTimeout(ctx, upstreamConnectBound)
		dial := func() mcp.Transport { return a.upstreamTransport(s, o.quiet) }
		up, uerr := codemode.ConnectUpstream(cctx, s.name, dial, &codemode.UpstreamOptions{CallTimeout: timeout, Redact: s.redact})
		cancel()
		if uerr != nil {
			if errors.Is(uerr, effect.ErrInvalidCall) {
				return nil, closeAll, usagef("--upstream %s: %v", quote(s.name), uerr)
			}
			return nil, closeAll, untyped(fmt.Errorf("sandbank: upstream %s: %s", s.name, effect.Excerpt(oneLine(strings.TrimPrefix(uerr.Error(), "codemode: upstream "+s.name+": ")))))
		}
		if logger != nil {
			logger.Info("sandbank: upstream connected", slog.String("upstream", s.name), slog.Int("tools", len(up.Tools())), slog.Int("skipped", len(up.Skipped())))
		}
		started = append(started, up)
	}
	host, err = codemode.NewHost(started...)
	if err != nil {
		return nil, closeAll, usagef("--upstream: %v", err) // parseUpstreams refuses two of one name first
	}
	return host, closeAll, nil
}

// upstreamTransport is the MCP transport to s: its command over stdio
// (its standard error goes to sandbank's, unless quiet), or streamable
// HTTP with its headers, following no redirect (a redirect would leave
// the allowed address with the headers).
func (a *app) upstreamTransport(s *upstreamSpec, quiet bool) mcp.Transport {
	if s.command != nil {
		cmd := exec.Command(s.command[0], s.command[1:]...)
		cmd.Env = append(os.Environ(), s.env...)
		cmd.Stderr = a.stderr
		if quiet || a.stderr == nil {
			cmd.Stderr = io.Discard
		}
		return &mcp.CommandTransport{Command: cmd}
	}
	return &mcp.StreamableClientTransport{
		Endpoint:             s.url,
		DisableStandaloneSSE: true,
		MaxRetries:           -1,
		HTTPClient: &http.Client{
			Transport:     headerTransport{headers: s.headers, base: http.DefaultTransport},
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}
}

// headerTransport adds an upstream's headers to every request.
type headerTransport struct {
	headers http.Header
	base    http.RoundTripper
}

func (h headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if len(h.headers) > 0 {
		req = req.Clone(req.Context())
		for k, vs := range h.headers {
			req.Header[http.CanonicalHeaderKey(k)] = append([]string(nil), vs...)
		}
	}
	return h.base.RoundTrip(req)
}
