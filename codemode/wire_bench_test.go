//go:build unix

package codemode_test

import (
	"context"
	"encoding/json"
	"errors"
	"syscall"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/sandbank/sandbank/codemode"
)

// BenchmarkUpstreamHugeAnswer: an HTTP upstream answers a call with a
// 200 MB tool result (as one JSON body); reports what the upstream got to
// write before the client stopped reading (MB-written) and the peak
// resident memory of the process (maxRSS-MB, which includes the test
// binary's own). docs/performance.md has the figures:
//
//	go test -run '^$' -bench BenchmarkUpstreamHugeAnswer -benchtime 1x ./mcpserver
func BenchmarkUpstreamHugeAnswer(b *testing.B) {
	const answer = 200 << 20
	u := newUpstream()
	u.srv.AddTool(&mcp.Tool{Name: "huge", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return nil, errors.New("answered by hugeHTTP")
	})
	url, written := hugeHTTPOf(b, u, false, answer)
	ctx := context.Background()
	up, err := codemode.ConnectUpstream(ctx, "up", func() mcp.Transport {
		return &mcp.StreamableClientTransport{Endpoint: url, DisableStandaloneSSE: true, MaxRetries: -1}
	}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer up.Close()
	b.ResetTimer()
	for range b.N {
		written.Store(0)
		_, err := up.HostFuncs()["up__huge"](ctx, json.RawMessage(`{}`))
		b.Logf("the call: %v", err)
	}
	b.StopTimer()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err == nil {
		b.ReportMetric(float64(ru.Maxrss)/1024, "maxRSS-MB") // Linux: KiB
	}
	b.ReportMetric(float64(written.Load())/(1<<20), "MB-written")
}
