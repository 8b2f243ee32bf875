package app

import (
	"encoding/json"
	"sort"
)

// Timeline is the lifecycle of job as the API shows it: the events the
// store recorded, plus the three every job has that its own fields already
// tell (submitted at created_at, started at started_at, succeeded at
// finished_at). Stores may leave those three out of their event table (the
// SQLite store does: they would be most of its writes) but must record a
// job.started for every attempt that did not succeed, since started_at only
// keeps the last one. Events a store did record are not repeated.
func Timeline(job *Job, recorded []Event) []Event {
	out := make([]Event, 0, len(recorded)+3)
	out = append(out, recorded...)
	has := func(typ string, match func(*Event) bool) bool {
		for i := range recorded {
			if recorded[i].Type == typ && (match == nil || match(&recorded[i])) {
				return true
			}
		}
		return false
	}
	add := func(typ string, at Event) {
		at.Type, at.JobID, at.Queue, at.Kind = typ, job.ID, job.Queue, job.Kind
		out = append(out, at)
	}
	if !has(EventSubmitted, nil) {
		add(EventSubmitted, Event{At: job.CreatedAt})
	}
	if job.StartedAt != nil && job.Attempts > 0 && job.Status != StatusDeadLetter &&
		!has(EventStarted, func(e *Event) bool { return e.At.Equal(*job.StartedAt) }) {
		add(EventStarted, Event{At: *job.StartedAt, Data: StartedData(job)})
	}
	if job.Status == StatusDone && job.FinishedAt != nil && !has(EventSucceeded, nil) {
		var data json.RawMessage
		if job.StartedAt != nil {
			data = FinishedData(job.StartedAt, *job.FinishedAt)
		}
		add(EventSucceeded, Event{At: *job.FinishedAt, Data: data})
	}
	rank := func(t string) int {
		switch t {
		case EventSubmitted:
			return 0
		case EventStarted:
			return 1
		case EventSucceeded:
			return 3
		}
		return 2
	}
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].At.Equal(out[j].At) {
			return out[i].At.Before(out[j].At)
		}
		return rank(out[i].Type) < rank(out[j].Type)
	})
	return out
}
