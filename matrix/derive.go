package matrix

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/lockbench/lockbench/catalog"
)

// Contradiction is a cell whose measured class contradicts what its rule
// expects: the rule's reason is for people to weigh against the runs.
type Contradiction struct {
	Cell     string
	Decision Decision
	Expect   string
	Reason   string
}

// Derived is what `matrix derive` found: the measured section, the cells
// whose class contradicts their rule, and the cells not decided yet.
type Derived struct {
	Measured       map[string]MeasuredCell
	Contradictions []Contradiction
	Open           []Contradiction
}

// Derive decides every cell the catalog holds matrix runs of, from its
// runs judged by a revision compatible accepts, one per seed. A cell run
// under more than one grid's flags is refused unless flags picks one: the
// section keeps one class per cell name.
func Derive(cat *catalog.Catalog, exp *Expectations, rule StopRule, compatible func(string) bool, flags string) (Derived, error) {
	cells, err := cat.MeasuredCells()
	if err != nil {
		return Derived{}, err
	}
	d := Derived{Measured: map[string]MeasuredCell{}}
	seen := map[string]string{}
	for _, mc := range cells {
		if flags != "" && mc.Flags != flags {
			continue
		}
		if other, ok := seen[mc.Name]; ok {
			return Derived{}, fmt.Errorf("cell %s was measured under two grids' flags (%s and %s): pick one with --flags", mc.Name, other, mc.Flags)
		}
		seen[mc.Name] = mc.Flags
		var c Cell
		if err := json.Unmarshal(mc.Spec, &c); err != nil {
			return Derived{}, fmt.Errorf("cell %s: its runs do not say what the cell is: %w", mc.Name, err)
		}
		if c.Name() != mc.Name {
			return Derived{}, fmt.Errorf("cell %s: this lockbench names it %s: its runs are of another naming", mc.Name, c.Name())
		}
		runs, _, err := cat.CellRuns(mc.Name, mc.Flags, compatible)
		if err != nil {
			return Derived{}, err
		}
		var t Tally
		var newest catalog.CellRun
		for _, r := range runs {
			t = t.Add(tallyOf(r.Verdict, ""))
			if r.Start.After(newest.Start) {
				newest = r
			}
		}
		expect, reason := exp.RuleFor(c)
		dec := rule.Decide(t, expect)
		con := Contradiction{Cell: mc.Name, Decision: dec, Expect: expect, Reason: reason}
		if !dec.Decided() {
			d.Open = append(d.Open, con)
			continue
		}
		d.Measured[mc.Name] = MeasuredCell{Class: dec.Class, Invalid: t.Invalid, Judged: t.Judged, Errors: t.Errors,
			CIRuns: dec.CIRuns, Revision: newest.Revision, Flags: mc.Flags}
		if dec.Class == ClassFinding || expect != ExpectEither && dec.Class != expect {
			d.Contradictions = append(d.Contradictions, con)
		}
	}
	return d, nil
}

// measuredHead opens the section derive writes, and its first line.
const (
	measuredHead    = "measured:"
	measuredComment = "# What the cells' runs decided, written by `lockbench matrix derive`\n"
)

// WithMeasured is the expectations file src with its measured section
// replaced by measured (or added at its end): the rules and mutants above
// it are kept byte for byte, comments included. The section is the file's
// last, and derive alone writes it.
func WithMeasured(src []byte, measured map[string]MeasuredCell) ([]byte, error) {
	for _, head := range []string{measuredComment, measuredHead} {
		if i := bytes.Index(src, []byte("\n"+head)); i >= 0 {
			src = src[:i+1]
			break
		}
	}
	var b bytes.Buffer
	b.Write(src)
	if len(src) > 0 && !bytes.HasSuffix(src, []byte("\n")) {
		b.WriteByte('\n')
	}
	b.WriteString(measuredComment)
	b.WriteString("# from the runs measured; edit the rules above, never this section.\n")
	if len(measured) == 0 {
		b.WriteString(measuredHead + " {}\n")
		return b.Bytes(), nil
	}
	b.WriteString(measuredHead + "\n")
	for _, name := range slices.Sorted(maps.Keys(measured)) {
		var out bytes.Buffer
		enc := yaml.NewEncoder(&out)
		enc.SetIndent(2)
		if err := enc.Encode(map[string]MeasuredCell{name: measured[name]}); err != nil {
			return nil, fmt.Errorf("measured %s: %w", name, err)
		}
		for _, l := range strings.SplitAfter(out.String(), "\n") {
			if l != "" {
				b.WriteString("  " + l)
			}
		}
	}
	return b.Bytes(), nil
}
