package report

// countMeanings says what each key of a checker's counts (results.json's
// "counts") tallies; the checkers table shows it on the key and lists the
// keys of the page under the table.
var countMeanings = map[string]string{
	"sections":                    "critical sections (a successful acquire up to its release) in the history",
	"sections_before_first_fault": "critical sections completed before the first fault began",
	"accepted":                    "critical sections whose write the store accepted",
	"rejected":                    "critical sections whose write the store rejected",
	"none":                        "critical sections that wrote nothing",
	"unknown":                     "writes (or sections) whose outcome is unknown: the client timed out or was cut off",
	"non_linearizable":            "points where no order of the critical sections fits the counter",
	"acquires":                    "acquires that succeeded",
	"accepted_writes":             "writes the store accepted",
	"rejected_writes":             "writes the store refused for a token older than one it had seen",
	"rejected_reads":              "reads the store refused for a token older than one it had seen (--fence all)",
	"stale_accepted":              "writes the store accepted although it had already seen a newer token",
	"duplicate_token":             "fencing tokens granted to more than one holding",
	"token_order":                 "tokens the store saw out of the order they were granted",
	"acknowledged":                "writes acknowledged to their client",
	"unknown_applied":             "writes with an unknown outcome that the store's log shows applied",
	"unknown_present":             "elements with an unknown outcome that are in the final set",
	"final":                       "the counter's final value, or the number of elements in the final set",
	"missing":                     "acknowledged (or applied) increments the final value lacks",
	"missing_max":                 "the most increments that can be missing, counting writes the store's log lacks",
	"lost":                        "acknowledged elements missing from the final set",
	"lost_acknowledged":           "acknowledged writes a later write erased",
	"regressions":                 "writes that took the counter back to an older value",
	"regressions_repaired":        "regressions a later write made good",
	"regressed_reads":             "reads that saw a value a regression had taken back",
	"holdings":                    "times a client held the lock",
	"proven":                      "holdings whose lease has a proven lower bound on its expiry",
	"two_holders":                 "overlaps of two holdings whose leases were both certainly valid",
	"stale_beliefs":               "holders that believed they held the lock past their lease",
	"stale_writes":                "writes attempted inside stale windows",
	"faults":                      "faults the nemesis injected",
	"faults_effective":            "faults that reached a holder: froze or cut off a client holding the lock, or opened a window",
}
