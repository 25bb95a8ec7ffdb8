package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/record"
	"github.com/sandbank/sandbank/spi"
)

// DefaultMaxResponseBytes bounds a response body the client reads: a
// record holds at most a few MiB of value and logs.
const DefaultMaxResponseBytes = 64 << 20

// Options configure a Client. Nil means defaults.
type Options struct {
	// APIKey is the tenant's key, sent as "Authorization: Bearer KEY".
	// Empty sends none (a server in development mode).
	APIKey string
	// HTTPClient sends the requests. Nil means a client with no overall
	// timeout (bound a run with its context).
	HTTPClient *http.Client
	// MaxResponseBytes bounds a response body. Zero means
	// DefaultMaxResponseBytes.
	MaxResponseBytes int64
}

// Client calls a Sandbank server. It is safe for concurrent use.
type Client struct {
	base    *url.URL
	key     string
	hc      *http.Client
	maxBody int64
}

// New returns a client of the server at baseURL ("http://host:port").
func New(baseURL string, opts *Options) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("client: %w: base URL must be http(s)://host[:port]", effect.ErrInvalidCall)
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{}
	}
	if o.MaxResponseBytes <= 0 {
		o.MaxResponseBytes = DefaultMaxResponseBytes
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	return &Client{base: u, key: o.APIKey, hc: o.HTTPClient, maxBody: o.MaxResponseBytes}, nil
}

// Run is one run request. Exactly one of Source, Binary and Script names
// the script; Engine, or Language for its default engine, chooses the
// engine.
type Run struct {
	Language string
	Engine   string
	// Source is the script's text.
	Source string
	// Binary is the script's bytes (a wasm module), sent in base64.
	Binary []byte
	// Script is the address of a script stored with Store.
	Script record.Address
	// Input is any value encoding/json can marshal; nil is null.
	Input any
	// Limits may lower the tenant's ceiling; zero fields mean it. The
	// wall clock travels in whole milliseconds.
	Limits spi.Limits
	// Shape is an optional JSON Schema the result must satisfy.
	Shape json.RawMessage
	// Files are the run's input files, sent in base64; the record's Files
	// are the output files the script wrote (see docs/design.md, "Files").
	// The server's effect checks their names and bounds them.
	Files []spi.File
}

type runLimits struct {
	WallClockMs int64 `json:"wallClockMs,omitempty"`
	MemoryBytes int64 `json:"memoryBytes,omitempty"`
}

type runBody struct {
	Language     string          `json:"language,omitempty"`
	Engine       string          `json:"engine,omitempty"`
	Source       *string         `json:"source,omitempty"`
	SourceBase64 []byte          `json:"sourceBase64,omitempty"`
	Script       record.Address  `json:"script,omitempty"`
	Input        json.RawMessage `json:"input,omitempty"`
	Limits       *runLimits      `json:"limits,omitempty"`
	Shape        json.RawMessage `json:"shape,omitempty"`
	Files        []spi.File      `json:"files,omitempty"`
}

// Run runs a script and returns its record. A typed failure returns the
// record and its *effect.Failure; any other error returns a nil record
// (see the package doc for the kinds).
func (c *Client) Run(ctx context.Context, r Run) (*effect.Record, error) {
	if (r.Source != "" && (r.Binary != nil || r.Script != "")) || (r.Binary != nil && r.Script != "") {
		return nil, fmt.Errorf("client: %w: only one of Source, Binary and Script may be set", effect.ErrInvalidCall)
	}
	body := runBody{Language: r.Language, Engine: r.Engine, Script: r.Script, Shape: r.Shape, Files: r.Files}
	switch {
	case r.Binary != nil:
		body.SourceBase64 = r.Binary
	case r.Script == "":
		src := r.Source
		body.Source = &src
	}
	in, err := json.Marshal(r.Input)
	if err != nil {
		return nil, fmt.Errorf("client: %w: the input does not encode as JSON: %v", effect.ErrInvalidCall, err)
	}
	body.Input = in
	if r.Limits != (spi.Limits{}) {
		if r.Limits.WallClock%time.Millisecond != 0 {
			return nil, fmt.Errorf("client: %w: the wall clock must be whole milliseconds", effect.ErrInvalidCall)
		}
		body.Limits = &runLimits{WallClockMs: r.Limits.WallClock.Milliseconds(), MemoryBytes: r.Limits.MemoryBytes}
	}
	var rec effect.Record
	if err := c.do(ctx, http.MethodPost, "/v1/runs", body, &rec); err != nil {
		return nil, err
	}
	if rec.Failure != nil {
		return &rec, rec.Failure
	}
	return &rec, nil
}

// Store stores a script in the tenant's store and returns its address.
func (c *Client) Store(ctx context.Context, script []byte) (record.Address, error) {
	src := string(script)
	var out struct {
		Script record.Address `json:"script"`
	}
	if err := c.do(ctx, http.MethodPost, "/v1/scripts", struct {
		Source *string `json:"source"`
	}{&src}, &out); err != nil {
		return "", err
	}
	if record.AddressOf(script) != out.Script {
		return "", &Error{Status: http.StatusOK, Kind: effect.KindInfrastructure.String(), Detail: "client: the server returned an address that is not the script's", Retryable: true}
	}
	return out.Script, nil
}

// Engine is one engine as GET /v1/engines lists it.
type Engine struct {
	Engine      string           `json:"engine"`
	Language    string           `json:"language"`
	Description string           `json:"description"`
	Default     bool             `json:"default"`
	Declared    spi.Capabilities `json:"declared"`
	Verified    struct {
		Status string   `json:"status"`
		Failed []string `json:"failedCases"`
	} `json:"verified"`
}

// Engines lists the engines the tenant may use.
func (c *Client) Engines(ctx context.Context) ([]Engine, error) {
	var out struct {
		Engines []Engine `json:"engines"`
	}
	if err := c.do(ctx, http.MethodGet, "/v1/engines", nil, &out); err != nil {
		return nil, err
	}
	return out.Engines, nil
}

func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("client: %w: %v", effect.ErrInvalidCall, err)
		}
		body = bytes.NewReader(b)
	}
	u := *c.base
	u.Path += path
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		return fmt.Errorf("client: %w: %v", effect.ErrInvalidCall, err)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return ctxErr
		}
		return &Error{Kind: effect.KindInfrastructure.String(), Detail: "client: " + err.Error(), Retryable: true, err: err}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, c.maxBody+1))
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return ctxErr
		}
		return &Error{Status: resp.StatusCode, Kind: effect.KindInfrastructure.String(), Detail: "client: reading the response: " + err.Error(), Retryable: true, err: err}
	}
	if int64(len(raw)) > c.maxBody {
		return &Error{Status: resp.StatusCode, Kind: effect.KindInfrastructure.String(), Detail: "client: the response is larger than MaxResponseBytes", Retryable: true}
	}
	if resp.StatusCode != http.StatusOK {
		return problemError(resp, raw)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return &Error{Status: resp.StatusCode, Kind: effect.KindInfrastructure.String(), Detail: "client: the response does not decode: " + err.Error(), Retryable: true, err: err}
	}
	return nil
}

// problemError decodes an error response.
func problemError(resp *http.Response, raw []byte) *Error {
	var p struct {
		Detail string `json:"detail"`
		Kind   string `json:"kind"`
	}
	_ = json.Unmarshal(raw, &p) // a body that is not a Problem still has its status
	e := &Error{Status: resp.StatusCode, Kind: p.Kind, Detail: p.Detail}
	if e.Detail == "" {
		e.Detail = "client: " + http.StatusText(resp.StatusCode)
	}
	e.Retryable = resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500
	if e.Kind == "" {
		e.Kind = effect.KindInvalidCall.String()
		if e.Retryable {
			e.Kind = effect.KindInfrastructure.String()
		}
	}
	if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s >= 0 {
		e.RetryAfter = time.Duration(s) * time.Second
	}
	return e
}
