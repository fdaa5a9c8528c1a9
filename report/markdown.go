package report

import (
	"bytes"
	"fmt"
	"github.com/lockbench/lockbench/rundir"
	"html"
	"html/template"
	"io"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/renderer"
	"github.com/yuin/goldmark/util"
)

// mermaidRenderer draws fenced ```mermaid blocks as inline SVG and leaves
// every other fenced block to a plain <pre>. It replaces goldmark's own
// renderer for fenced code blocks only.
type mermaidRenderer struct{ n int }

func (r *mermaidRenderer) RegisterFuncs(reg renderer.NodeRendererFuncRegisterer) {
	reg.Register(ast.KindFencedCodeBlock, r.fenced)
}

func (r *mermaidRenderer) fenced(w util.BufWriter, src []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if !entering {
		return ast.WalkContinue, nil
	}
	n := node.(*ast.FencedCodeBlock)
	var code bytes.Buffer
	for i := 0; i < n.Lines().Len(); i++ {
		seg := n.Lines().At(i)
		code.Write(seg.Value(src))
	}
	if string(n.Language(src)) == "mermaid" {
		r.n++
		d, err := parseSequence(code.String())
		if err == nil {
			fmt.Fprintf(w, "<figure class=\"diagram\">%s<details><summary>Mermaid source</summary><pre>%s</pre></details></figure>\n",
				d.svg(r.n), html.EscapeString(code.String()))
			return ast.WalkSkipChildren, nil
		}
		fmt.Fprintf(w, "<p class=\"problem\">diagram not drawn: %s</p>\n", html.EscapeString(err.Error()))
	}
	fmt.Fprintf(w, "<pre><code>%s</code></pre>\n", html.EscapeString(code.String()))
	return ast.WalkSkipChildren, nil
}

var mdPage = template.Must(template.New("md").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
body { margin: 0; background: #f1f5f9; color: #0f172a; font: 14px/1.5 "Liberation Sans", "DejaVu Sans", Arial, sans-serif; }
main { max-width: 1100px; margin: 0 auto; padding: 20px; background: #fff; }
nav { font-size: 13px; margin-bottom: 8px; }
a { color: #1d4ed8; }
table { border-collapse: collapse; } th, td { border: 1px solid #e2e8f0; padding: 4px 8px; text-align: left; }
pre { background: #f8fafc; padding: 8px; overflow-x: auto; }
figure.diagram { margin: 12px 0; overflow-x: auto; }
.problem { color: #b45309; }
</style></head>
<body><main>
<nav><a href="/">all runs</a>{{if .Report}} · <a href="report.html">report</a>{{end}} · <a href="?raw">{{.Title}} as Markdown</a></nav>
{{.Body}}
</main></body></html>
`))

// WriteMarkdownPage renders a Markdown file of a run or a matrix as a
// page: tables as HTML tables and each Mermaid sequence diagram as inline
// SVG, its source kept under the drawing.
func WriteMarkdownPage(w io.Writer, name string, src []byte) error {
	md := goldmark.New(goldmark.WithExtensions(extension.GFM),
		goldmark.WithRendererOptions(renderer.WithNodeRenderers(util.Prioritized(&mermaidRenderer{}, 100))))
	var body bytes.Buffer
	if err := md.Convert(src, &body); err != nil {
		return fmt.Errorf("render %s: %w", name, err)
	}
	// The Markdown is lockbench's own and goldmark escapes raw HTML in it
	// (no WithUnsafe), so its output is trusted as HTML.
	if err := mdPage.Execute(w, struct {
		Title  string
		Report bool
		Body   template.HTML
	}{name, name == rundir.AnomaliesFile, template.HTML(body.String())}); err != nil {
		return fmt.Errorf("render %s: %w", name, err)
	}
	return nil
}
