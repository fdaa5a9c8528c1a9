package verdict

import (
	_ "embed"
	"strings"
)

// compatible lists the revisions whose verdicts equal this one's, one per
// line ('#' starts a comment). Runs judged by them pool with runs judged
// by this lockbench (matrix --until-decided, matrix derive); a run judged
// by any other revision counts only once `lockbench check` has judged it
// again. A change that alters a verdict empties the list; any other
// change adds the revision before it.
//
//go:embed compatible.txt
var compatible string

// Compatible says whether a judgment by lockbench version v (Version's
// form, as results.json keeps it) may pool with this lockbench's: it is
// this lockbench, or its revision is listed. A build from uncommitted
// changes ("-dirty") is compatible only with itself: no one can tell
// what it judged by.
func Compatible(v string) bool {
	if v == Version() {
		return true
	}
	rev := v[strings.LastIndex(v, " ")+1:]
	if rev == "" || strings.HasSuffix(rev, "-dirty") {
		return false
	}
	for _, line := range strings.Split(compatible, "\n") {
		if l := strings.TrimSpace(line); l != "" && !strings.HasPrefix(l, "#") && l == rev {
			return true
		}
	}
	return false
}
