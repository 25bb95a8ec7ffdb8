package typescript

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"

	"github.com/evanw/esbuild/pkg/api"

	"github.com/sandbank/sandbank/spi"
)

// sourceFile is the file name errors give the script.
const sourceFile = "script.ts"

// tsconfig fixes the compiler options that change semantics, so that none
// is left to esbuild's defaults by accident.
const tsconfig = `{"compilerOptions":{"useDefineForClassFields":true,"experimentalDecorators":false,"verbatimModuleSyntax":false,"preserveValueImports":false}}`

// options are the transform's fixed options; see the package
// documentation.
func options(format api.Format) api.TransformOptions {
	return api.TransformOptions{
		Loader:      api.LoaderTS,
		Target:      api.ES2022,
		Format:      format,
		Sourcefile:  sourceFile,
		TsconfigRaw: tsconfig,
		Charset:     api.CharsetUTF8,
		LogLevel:    api.LogLevelSilent,
		TreeShaking: api.TreeShakingFalse,
	}
}

// transform strips the types of a TypeScript script. It returns the
// JavaScript, or the Threw outcome that refuses the script.
func transform(script []byte) ([]byte, *spi.Outcome) {
	src := string(script)
	r := api.Transform(src, options(api.FormatDefault))
	if len(r.Errors) > 0 {
		return nil, syntaxError(r.Errors[0])
	}
	if usesModuleSyntax(src, r.Code) {
		return nil, &spi.Outcome{Kind: spi.KindThrew, Name: "SyntaxError",
			Message: "module syntax (import, export) is not available: a script has no modules; use the global input"}
	}
	return r.Code, nil
}

// moduleLine matches a line of esbuild's output that starts an import or
// export statement: esbuild prints every top-level statement at column 0,
// and import() and import.meta are expressions, which this leaves out.
var moduleLine = regexp.MustCompile(`(?m)^(?:import[\s{*"']|export[\s{*])`)

// usesModuleSyntax reports whether the script has import or export
// statements. A line of a multi-line template literal can also start with
// "export ", so a match is confirmed by the CommonJS transform, which
// rewrites module syntax and leaves every other script as it was.
func usesModuleSyntax(src string, js []byte) bool {
	if !moduleLine.Match(js) {
		return false
	}
	cjs := api.Transform(src, options(api.FormatCommonJS))
	if len(cjs.Errors) > 0 {
		// The CommonJS format refuses top-level await, which the default
		// format keeps: the script's own statements decide then.
		return false
	}
	return !bytes.Equal(cjs.Code, js)
}

// syntaxError reports an esbuild error as the script's SyntaxError, with
// the TypeScript line and column (1-based; esbuild counts columns from 0).
func syntaxError(m api.Message) *spi.Outcome {
	var b strings.Builder
	b.WriteString(sourceFile)
	if loc := m.Location; loc != nil {
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(loc.Line))
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(loc.Column + 1))
	}
	b.WriteString(": ")
	b.WriteString(m.Text)
	return &spi.Outcome{Kind: spi.KindThrew, Name: "SyntaxError", Message: b.String()}
}
