package catalog

import (
	"slices"

	"github.com/lockbench/lockbench/metrics"
)

// Histograms are a group's histograms, its runs' merged, for readers that
// draw whole distributions rather than the percentiles Group holds. They
// are not part of the JSON a comparison prints: its contract is the
// percentiles.
type Histograms struct {
	AcquireWait        metrics.Histogram
	AcquireUncontended metrics.Histogram
	Handover           metrics.Histogram
	RenewRTT           metrics.Histogram
	Unavailable        metrics.Histogram
}

// Histograms are copies of the group's merged histograms: changing them
// leaves the group as it was.
func (g Group) Histograms() Histograms {
	c := func(h metrics.Histogram) metrics.Histogram {
		h.Counts = slices.Clone(h.Counts)
		return h
	}
	return Histograms{c(g.hists[0]), c(g.hists[1]), c(g.hists[2]), c(g.hists[3]), c(g.hists[4])}
}
