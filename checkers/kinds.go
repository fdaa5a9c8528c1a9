package checkers

import "slices"

// AnomalyKind is a kind of anomaly, declared by the checker that finds it,
// as porcupine's Model describes its own operations: its name in
// results.json, what it means, and its place in a run's story. Nothing
// outside this package matches anomalies by their names.
type AnomalyKind struct {
	Name  string
	About string
	Story Story
	// NewerHolder is set when its second client is the holder of the
	// newer token that the first client's request came after (the store
	// had accepted it): the story names that holder.
	NewerHolder bool
}

// Story is where an anomaly belongs in the story of a run.
type Story int

const (
	// StoryGrant: told as an incident of the grant its first client and
	// token name, or as one of its own when it names none.
	StoryGrant Story = iota
	// StoryCulprit: its first store entry is the culprit's write (a
	// stale write accepted, a regression), the incident's anchor.
	StoryCulprit
	// StoryLoss: an acknowledged write lost to another's write; its first
	// store entry is the lost write, its second the write that erased it.
	// It is told with the stale write that was lost, if it was one, and
	// otherwise with the eraser, and the lost write is marked erased.
	StoryLoss
	// StoryWhole: about the run as a whole (no order fits the sections),
	// told with the incidents of the sections it names.
	StoryWhole
)

// anomalyKinds are every kind a checker of this build finds.
var anomalyKinds = []AnomalyKind{NonLinearizable, StaleWriteAccepted, TokenOrder, DuplicateToken, LostUpdate, Regression,
	LostElement, PhantomElement, TwoHoldersKind, Deadlock}

// AnomalyKinds are every kind a checker of this build finds.
func AnomalyKinds() []AnomalyKind { return slices.Clone(anomalyKinds) }

// KindOf is the kind named name. A results.json from another build may
// name a kind this one does not know: it is told as a grant's incident.
func KindOf(name string) AnomalyKind {
	for _, k := range anomalyKinds {
		if k.Name == name {
			return k
		}
	}
	return AnomalyKind{Name: name, Story: StoryGrant}
}

// KindOf is the kind of the anomaly.
func (a Anomaly) KindOf() AnomalyKind { return KindOf(a.Kind) }

// WindowKind is a kind of period the exclusion checker draws attention to.
type WindowKind struct {
	Name  string
	About string
	// Violation is set for a broken promise of the lock, whose window
	// spans every client in it; otherwise the window is its first
	// client's belief.
	Violation bool
}

// The window kinds.
var (
	TwoHolders  = WindowKind{Name: "two-holders", About: "two holders: both leases certainly valid", Violation: true}
	StaleBelief = WindowKind{Name: "stale-belief", About: "stale: believed held past its lease"}
)

// WindowKinds are the kinds of windows, in the order a legend lists them.
func WindowKinds() []WindowKind { return []WindowKind{TwoHolders, StaleBelief} }

// KindOf is the window's kind; one this build does not know is a belief.
func (w Window) KindOf() WindowKind {
	for _, k := range WindowKinds() {
		if k.Name == w.Kind {
			return k
		}
	}
	return WindowKind{Name: w.Kind}
}
