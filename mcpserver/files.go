package mcpserver

import (
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/dustin/go-humanize"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandbank/sandbank/spi"
)

// Files at the MCP door (docs/design.md, "Files"): input files are the
// run tool's "files" argument, [{"name": …, "data": <base64>}], handed to
// the effect as they are (it checks their names and bounds them; the
// transport's message bound, Server.MaxMessageBytes, bounds what is read
// before). Output files come back after the result's text: an image as
// MCP image content, so that the model sees it, anything else as an
// embedded resource.

// imageTypes are the image formats a client is asked to show, as
// http.DetectContentType names them: a file is an image by its content,
// never by its name.
var imageTypes = map[string]bool{"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true}

// fileURI is the URI of an output file in an embedded resource. The name
// is one spi.CheckFileName accepts, so it needs no escaping.
func fileURI(name string) string { return "sandbank:files/" + name }

// filesContent returns the content items of a run's output files: a line
// of text naming them, then one item per file, in name order: an image
// (PNG, JPEG, GIF, WebP) as image content, valid UTF-8 text as a text
// resource, anything else as a blob resource. None without files.
func filesContent(files []spi.File) []mcp.Content {
	if len(files) == 0 {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "The script wrote %d output files:", len(files))
	items := make([]mcp.Content, 0, len(files)+1)
	items = append(items, nil) // the text, once written
	for i, f := range files {
		ct := http.DetectContentType(f.Data)
		mime, _, _ := strings.Cut(ct, ";")
		sep := ","
		if i == len(files)-1 {
			sep = "."
		}
		fmt.Fprintf(&b, " %s (%s, %s)%s", f.Name, mime, humanize.IBytes(uint64(len(f.Data))), sep)
		switch {
		case imageTypes[mime]:
			items = append(items, &mcp.ImageContent{Data: f.Data, MIMEType: mime})
		case strings.HasPrefix(mime, "text/") && utf8.Valid(f.Data):
			items = append(items, &mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: fileURI(f.Name), MIMEType: mime, Text: string(f.Data)}})
		default:
			items = append(items, &mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: fileURI(f.Name), MIMEType: mime, Blob: f.Data}})
		}
	}
	b.WriteString("\n")
	items[0] = &mcp.TextContent{Text: b.String()}
	return items
}

// filesSchema is the input schema of the "files" argument.
func filesSchema() map[string]any {
	return map[string]any{
		"type": "array",
		"description": fmt.Sprintf("Optional: input files for the script. Each name is 1 to %d letters, digits, '.', '_' or '-', beginning with a letter or a digit (no directories); data is the file's bytes in base64.",
			spi.MaxFileNameBytes),
		"items": map[string]any{
			"type": "object",
			"properties": map[string]any{
				"name": map[string]any{"type": "string", "minLength": 1, "maxLength": spi.MaxFileNameBytes},
				"data": map[string]any{"type": "string", "contentEncoding": "base64"},
			},
			"required":             []string{"name", "data"},
			"additionalProperties": false,
		},
	}
}

// fileIdioms is how a script of each language reads and writes files.
var fileIdioms = map[string]string{
	"javascript": "files.read(name) returns an input file as a string (files.read(name, \"bytes\") as a Uint8Array), files.list() lists the input files, files.write(name, data) writes an output file (data a string or a Uint8Array).",
	"typescript": "files.read(name) returns an input file as a string (files.read(name, \"bytes\") as a Uint8Array), files.list() lists the input files, files.write(name, data) writes an output file (data a string or a Uint8Array).",
	"starlark":   "files.read(name) returns an input file as a string (files.read(name, bytes=True) as bytes), files.list() lists the input files, files.write(name, data) writes an output file (data a string or bytes).",
	"python":     "The input files are in the working directory, read-only: open(\"data.csv\"). Output files are the files the script writes directly under out/: open(\"out/chart.png\", \"wb\").",
}

// filesSection is the part of a run tool's description about files; empty
// for an engine that does not declare them.
func filesSection(lang string, caps spi.Capabilities) string {
	if !caps.Files {
		return ""
	}
	return "\n\nFiles: pass input files as the \"files\" argument. " + fileIdioms[lang] +
		" The output files of a run that succeeds come back after the result: images (PNG, JPEG, GIF, WebP) as image content you can see, other files as embedded resources."
}

// filesClause is what the server's instructions say of files: none, or
// only those of the "files" argument when a tool's engine declares files.
func filesClause(tools []*runTool) string {
	for _, t := range tools {
		if t.entry.Capabilities.Files {
			return "no files but those passed in the \"files\" argument (of the tools that take it)"
		}
	}
	return "no files"
}
