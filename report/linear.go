package report

import (
	"fmt"
	"html/template"
	"io"

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
	if n := len(an.sections); n > maxLinearSections {
		return executeSkipped(w, an, fmt.Sprintf("The history has %d critical sections; porcupine's page is drawn only up to %d, "+
			"because its size grows with every operation and partial linearization.", n, maxLinearSections))
	}
	timeout := an.in.LinearTimeout
	if timeout <= 0 {
		timeout = DefaultLinearTimeout
	}
	model := checkers.CounterModel()
	res, info := porcupine.CheckOperationsVerbose(model, checkers.Operations(an.sections), timeout)
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
	if err := porcupine.Visualize(model, info, w); err != nil {
		return fmt.Errorf("porcupine visualization: %w", err)
	}
	return nil
}

func executeSkipped(w io.Writer, an *analysis, reason string) error {
	if err := skippedLinear.Execute(w, struct{ Title, Reason string }{an.test.Name, reason}); err != nil {
		return fmt.Errorf("execute template: %w", err)
	}
	return nil
}
