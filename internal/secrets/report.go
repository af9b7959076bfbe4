package secrets

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// Status is what happened to one secret.
type Status string

// Statuses of a report line.
const (
	Created   Status = "created"
	Updated   Status = "updated"
	Unchanged Status = "unchanged"
	Failed    Status = "failed"
	// Orphaned: a secret the sync wrote (tagged with a cluster in scope)
	// that no record lists any more; never deleted by the sync.
	Orphaned Status = "orphaned"
	// WouldCreate and WouldUpdate are --dry-run's created and updated.
	WouldCreate Status = "would create"
	WouldUpdate Status = "would update"
)

// Item is one secret's line in the report. It names keys, never values.
type Item struct {
	Cluster string `json:"cluster"`
	// Secret is the Secrets Manager name.
	Secret string `json:"secret"`
	// File is the SOPS file in the repo ("" for an orphan).
	File   string `json:"file,omitempty"`
	Status Status `json:"status"`
	// Keys are the key names written or to be written: all of them on a
	// create, the added (+), changed (~) and removed (-) ones on an update.
	Keys []string `json:"keys,omitempty"`
	// Tags is true when the sync (re)set the secret's tags.
	Tags bool `json:"tagsSet,omitempty"`
	// Reason says why a secret failed or was orphaned, or what an update changed.
	Reason string `json:"reason,omitempty"`
	// Retries counts the calls repeated by Policy (throttling, eventual consistency).
	Retries int `json:"retries,omitempty"`
}

// Report is the outcome of one sync, one item per secret in cluster and
// name order (then orphans).
type Report struct {
	DryRun bool   `json:"dryRun"`
	Items  []Item `json:"items"`
	// Warnings are problems that are no secret's (the orphan listing failed).
	Warnings []string `json:"warnings,omitempty"`
	Summary  string   `json:"summary"`
}

// Exit codes of `spokeforge secrets sync` (1 is bad input: flags, records).
const (
	ExitSynchronised = 0 // every secret synchronised (or would be, with --dry-run)
	ExitPartial      = 2 // some synchronised, some failed
	ExitNone         = 3 // secrets to synchronise, none synchronised
)

// counts tallies the items by status.
func (r *Report) counts() map[Status]int {
	c := map[Status]int{}
	for _, it := range r.Items {
		c[it.Status]++
	}
	return c
}

// ok reports the synchronised items and the total (orphans aside).
func (r *Report) ok() (ok, total int) {
	c := r.counts()
	ok = c[Created] + c[Updated] + c[Unchanged] + c[WouldCreate] + c[WouldUpdate]
	return ok, ok + c[Failed]
}

// summarise sets Summary: "3 of 5 synchronised (1 created, 1 updated, 1
// unchanged), 2 failed, 1 orphaned".
func (r *Report) summarise() {
	c := r.counts()
	ok, total := r.ok()
	var parts []string
	for _, s := range []Status{Created, Updated, Unchanged, WouldCreate, WouldUpdate} {
		if c[s] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", c[s], s))
		}
	}
	verb := "synchronised"
	if r.DryRun {
		verb = "in sync or ready to write (dry run: nothing written)"
	}
	s := fmt.Sprintf("%d of %d %s", ok, total, verb)
	if len(parts) > 0 {
		s += " (" + strings.Join(parts, ", ") + ")"
	}
	if c[Failed] > 0 {
		s += fmt.Sprintf(", %d failed", c[Failed])
	}
	if c[Orphaned] > 0 {
		s += fmt.Sprintf(", %d orphaned", c[Orphaned])
	}
	r.Summary = s
}

// ExitCode tells all synchronised, partial and nothing synchronised apart;
// orphans and warnings do not count.
func (r *Report) ExitCode() int {
	ok, total := r.ok()
	switch {
	case ok == total:
		return ExitSynchronised
	case ok == 0:
		return ExitNone
	}
	return ExitPartial
}

// WriteTable writes the report as a table, then the warnings and the summary.
func (r *Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CLUSTER\tSECRET\tSTATUS\tKEYS\tDETAIL")
	for _, it := range r.Items {
		keys := strings.Join(it.Keys, ",")
		if keys == "" {
			keys = "-"
		}
		detail := it.Reason
		if it.Tags {
			detail = strings.TrimPrefix(detail+"; tags set", "; ")
		}
		if it.Retries > 0 {
			detail = strings.TrimPrefix(fmt.Sprintf("%s; %d retries", detail, it.Retries), "; ")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", it.Cluster, it.Secret, it.Status, keys, detail)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, warn := range r.Warnings {
		fmt.Fprintln(w, "warning:", warn)
	}
	_, err := fmt.Fprintln(w, r.Summary)
	return err
}

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}
