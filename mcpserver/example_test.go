package mcpserver_test

import (
	"context"
	"fmt"
	"log"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandbank/sandbank/backends/starlark"
	"github.com/sandbank/sandbank/mcpserver"
	"github.com/sandbank/sandbank/registry"
	"github.com/sandbank/sandbank/spi"
)

// A server with one Starlark engine, and a client calling its tool over an
// in-memory transport (a program serves mcp.StdioTransport or
// mcp.NewStreamableHTTPHandler the same way).
func Example() {
	ctx := context.Background()
	probe, err := starlark.New(nil)
	if err != nil {
		log.Fatal(err)
	}
	reg := registry.New()
	reg.Register(registry.Entry{
		Engine: "starlark", Language: "starlark", Capabilities: probe.Capabilities(),
		Factory: func() (spi.Backend, error) { return starlark.New(nil) },
	})
	srv, err := mcpserver.New(reg, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	fmt.Println(srv.Tools())

	serverSide, clientSide := mcp.NewInMemoryTransports()
	if _, err := srv.MCP().Connect(ctx, serverSide, nil); err != nil {
		log.Fatal(err)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "example", Version: "1"}, nil)
	cs, err := client.Connect(ctx, clientSide, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer cs.Close()

	for _, script := range []string{
		"def main(input):\n    return {\"double\": input * 2}\n",
		"def main(input):\n    fail(\"no rows\")\n",
	} {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{
			Name:      "run_starlark",
			Arguments: map[string]any{"script": script, "input": 21},
		})
		if err != nil {
			log.Fatal(err) // infrastructure: retryable
		}
		text := res.Content[0].(*mcp.TextContent).Text
		lines := strings.SplitN(text, "\n", 3)
		fmt.Println(res.IsError, lines[0], lines[1])
	}
	// Output:
	// [run_starlark list_engines]
	// false The script returned: {"double":42}
	// true The script failed: scriptError: fail: no rows The script threw an error or did not compile. Read the error's name and message, fix the script, and call the tool again.
}
