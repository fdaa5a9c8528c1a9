package report

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"github.com/lockbench/lockbench/rundir"
	"html"
	"html/template"
	"io"
	"strconv"

	"github.com/anishathalye/porcupine"

	"github.com/lockbench/lockbench/checkers"
	"github.com/lockbench/lockbench/history"
)

// maxLinearSections bounds the histories porcupine's page is drawn for:
// the page embeds every operation and partial linearization, and past a
// few thousand sections it grows to tens of megabytes that no browser
// renders usefully.
const maxLinearSections = 5000

var skippedLinear = template.Must(template.New("linear").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Title}}: linearizability</title></head>
<body style="font: 15px/1.5 sans-serif; margin: 2em">
<nav><a href="report.html">← report</a></nav>
<h1>No linearizability visualization</h1>
<p>{{.Reason}}</p>
<p>The linearizable checker's verdict and explanation are in <a href="report.html">report.html</a>.</p>
</body></html>
`))

// writeLinear writes porcupine's visualization of the critical sections,
// with the fault windows and lease losses added as annotations.
func (an *analysis) writeLinear(w io.Writer) error {
	if wl := an.test.Config.Workload; wl != "" && wl != "counter" {
		return executeSkipped(w, an, fmt.Sprintf("The %s workload is not checked against the counter model this page draws.", wl))
	}
	sections := an.criticalSections()
	if n := len(sections); n > maxLinearSections {
		return executeSkipped(w, an, fmt.Sprintf("The history has %d critical sections; porcupine's page is drawn only up to %d, "+
			"because its size grows with every operation and partial linearization.", n, maxLinearSections))
	}
	timeout := an.in.LinearTimeout
	if timeout <= 0 {
		timeout = DefaultLinearTimeout
	}
	model := checkers.CounterModel()
	res, info := porcupine.CheckOperationsVerbose(model, checkers.Operations(sections), timeout)
	var notes []porcupine.Annotation
	for _, f := range an.faults {
		notes = append(notes, porcupine.Annotation{Tag: "nemesis", Start: f.start, End: f.end,
			Description: f.description, Details: f.title, BackgroundColor: "#ddd6fe"})
	}
	for _, name := range an.clients {
		for _, ll := range an.lanes[name].lost {
			text := fmt.Sprintf("lease lost (token %d)", ll.token)
			details := fmt.Sprintf("%s learned at %s that its lease was lost", name, history.Seconds(ll.t))
			if n, ok := history.ClientNumber(name); ok {
				// Sections number c3 as client 2; the annotation joins its row.
				notes = append(notes, porcupine.Annotation{ClientId: n - 1, Start: ll.t, Description: text, Details: details, BackgroundColor: "#fecaca"})
			} else {
				notes = append(notes, porcupine.Annotation{Tag: name, Start: ll.t, Description: text, Details: details, BackgroundColor: "#fecaca"})
			}
		}
	}
	if res == porcupine.Unknown {
		notes = append(notes, porcupine.Annotation{Tag: "checker", Start: 0, End: an.end,
			Description: fmt.Sprintf("search timed out after %s: partial results", timeout), BackgroundColor: "#fde68a"})
	}
	info.AddAnnotations(notes)
	var page bytes.Buffer
	if err := porcupine.Visualize(model, info, &page); err != nil {
		return fmt.Errorf("porcupine visualization: %w", err)
	}
	if _, err := w.Write(an.linearChrome(page.Bytes())); err != nil {
		return fmt.Errorf("write %s: %w", rundir.LinearFile, err)
	}
	return nil
}

// linearChrome fits porcupine's page into the run's: the test's name in
// the title, a link back to report.html, and each row named after its
// client (c3) rather than porcupine's client number (2). Porcupine offers
// no option for any of these, so its page is edited: the title and body
// tags it writes, and a script that renames the row labels after its own
// script drew them.
func (an *analysis) linearChrome(page []byte) []byte {
	names := map[string]string{}
	for _, c := range an.clients {
		if n, ok := history.ClientNumber(c); ok {
			names[strconv.Itoa(n-1)] = c
		}
	}
	js, _ := json.Marshal(names) // a map of strings always encodes
	title := html.EscapeString(cmp.Or(an.test.Name, "run"))
	page = bytes.Replace(page, []byte("<title>Porcupine</title>"), []byte("<title>"+title+": linearizability</title>"), 1)
	page = bytes.Replace(page, []byte("<body>"), []byte(`<body>
    <nav style="font: 14px sans-serif; margin: 0 0 8px"><a href="report.html">← report</a> · <b>`+title+`</b>: porcupine's view of the linearizability search; one row per client, the nemesis's faults and lease losses as annotations</nav>`), 1)
	relabel := `<script>
      // Rows are labelled with porcupine's client numbers; name them as the history does.
      const lockbenchClients = ` + string(js) + `
      for (const t of document.querySelectorAll('#canvas text[text-anchor="end"]')) {
        if (Object.hasOwn(lockbenchClients, t.textContent)) t.textContent = lockbenchClients[t.textContent]
      }
    </script>
  </body>`
	i := bytes.LastIndex(page, []byte("</body>"))
	if i < 0 {
		return page
	}
	return append(page[:i:i], append([]byte(relabel), page[i+len("</body>"):]...)...)
}

func executeSkipped(w io.Writer, an *analysis, reason string) error {
	if err := skippedLinear.Execute(w, struct{ Title, Reason string }{an.test.Name, reason}); err != nil {
		return fmt.Errorf("execute template: %w", err)
	}
	return nil
}
