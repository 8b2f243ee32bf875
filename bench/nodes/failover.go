package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/queuehq/queue/bench/internal/benchkit"
)

// failover is what killing the leader showed.
type failover struct {
	killedNode int
	lockMoved  time.Duration // kill -> another node's connection holds the leader lock
	firstFire  time.Duration // kill -> the first periodic fire recorded after it (its created_at)
	recovered  time.Duration // kill -> the job claimed on the killed node is no longer processing
	afterLease time.Duration // lease expiry -> the same
	staleState string        // the job's status once recovered
	fires      int           // fire times checked, first to last
	lost       []time.Time   // whole seconds in [first, last] without a fire record and its job
	doubled    []string      // fire times with more than one job, or jobs without a fire record
	maxLate    time.Duration // the latest fire's created_at - fire_at around the failover
	lateFires  int           // fires enqueued more than a second after their time
	gapFires   int           // fires due between the kill and the first fire after it: enqueued late, by the new leader
}

func (f *failover) summary() string {
	return fmt.Sprintf("leader (node %d) killed: lock moved in %s, periodic fired again after %s, stale job %s after %s (%s after its lease expired); %d fires checked (%d due while no node led), %d lost, %d doubled, latest fire %s late",
		f.killedNode, sec(f.lockMoved), sec(f.firstFire), f.staleState, sec(f.recovered), sec(f.afterLease), f.fires, f.gapFires, len(f.lost), len(f.doubled), sec(f.maxLate))
}

func sec(d time.Duration) string { return fmt.Sprintf("%.2f s", d.Seconds()) }

type fire struct {
	at, created time.Time
	job         *int64
}

// fires reads every fire record of the tick entry.
func (c *cluster) fires(ctx context.Context) (map[int64]fire, error) {
	rows, err := c.db.Query(ctx, `SELECT fire_at, created_at, job_id FROM periodic_fires WHERE entry = 'tick'`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[int64]fire{}
	for rows.Next() {
		var f fire
		if err := rows.Scan(&f.at, &f.created, &f.job); err != nil {
			return nil, err
		}
		out[f.at.UnixMilli()] = f
	}
	return out, rows.Err()
}

// leaderPID is the PostgreSQL backend holding this database's leader lock
// (a session advisory lock on a connection named "queue leader ...").
func (c *cluster) leaderPID(ctx context.Context) (int32, error) {
	var pid int32
	err := c.db.QueryRow(ctx, `SELECT l.pid FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
		WHERE l.locktype = 'advisory' AND l.granted AND l.database = $1 AND a.application_name LIKE 'queue leader%'
		LIMIT 1`, c.dbOID).Scan(&pid)
	return pid, err
}

// leaderNode finds the node whose log says it took the lock on backend pid.
func (c *cluster) leaderNode(pid int32) (*node, error) {
	for _, nd := range c.nodes {
		f, err := os.Open(nd.log)
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<16), 1<<20)
		found := false
		for sc.Scan() {
			var l struct {
				Message string `json:"message"`
				PID     int32  `json:"backend_pid"`
			}
			if json.Unmarshal(sc.Bytes(), &l) == nil && l.Message == "maintenance leader" {
				found = l.PID == pid
			}
		}
		f.Close()
		if found {
			return nd, nil
		}
	}
	return nil, fmt.Errorf("no node's log says it leads on backend %d", pid)
}

// failover kills the leader with SIGKILL just after claiming a job through
// it (lease -stale-timeout), and watches the survivors take over: the
// leader lock, the periodic fires, the recovery of the orphaned job. Then
// it checks every fire from the first to the last: one fire record per
// whole second, each with its job, and one job per record.
//
// What "no fire lost or doubled" means here: the entry fires every whole
// second (@every 1s), each fire time at most once across nodes (the store
// keys it by (entry, fire time)). A node's scheduler keeps each entry's
// next fire from its own start; when it becomes leader it fires every fire
// time from there up to now, the ones the dead leader fired being refused
// by that key, so the fires due while no node led are enqueued late, at
// the takeover, and none is skipped. (catch_up = "one" is about a restart,
// when a scheduler starts from the last recorded fire: it enqueues only the
// latest missed fire. No node restarts here.)
func (c *cluster) failover(hc *http.Client, o options) (*failover, error) {
	ctx := context.Background()
	// The periodic entry has fired a few times.
	for deadline := time.Now().Add(10 * time.Second); ; {
		fs, err := c.fires(ctx)
		if err != nil {
			return nil, err
		}
		if len(fs) >= 3 {
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the periodic entry fired %d times in 10 s", len(fs))
		}
		time.Sleep(200 * time.Millisecond)
	}
	var leader *node
	var oldPID int32
	for deadline := time.Now().Add(10 * time.Second); ; {
		pid, err := c.leaderPID(ctx)
		if err == nil {
			oldPID = pid
			if leader, err = c.leaderNode(pid); err == nil {
				break
			}
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("no leader found: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	var survivor *node
	for _, nd := range c.nodes {
		if nd != leader {
			survivor = nd
			break
		}
	}
	// A job claimed through the leader, whose worker dies with it.
	id, err := submit(hc, leader.base, "stale", `,"timeout":"`+o.staleTimeout.String()+`"`)
	if err != nil {
		return nil, err
	}
	var got struct {
		Jobs []struct {
			ID             int64     `json:"id"`
			LeaseExpiresAt time.Time `json:"lease_expires_at"`
		} `json:"jobs"`
	}
	if err := benchkit.Post(context.Background(), hc, leader.base+"/api/queues/stale/claim", []byte(`{"worker_id":"doomed","limit":1}`), &got); err != nil {
		return nil, err
	}
	if len(got.Jobs) != 1 || got.Jobs[0].ID != id {
		return nil, fmt.Errorf("claimed %d jobs through the leader, want job %d", len(got.Jobs), id)
	}
	expires := got.Jobs[0].LeaseExpiresAt

	// Watch the fires from here on (a retention pass could delete old
	// records; keep every one seen).
	seen := map[int64]fire{}
	var mu sync.Mutex
	record := func() error {
		fs, err := c.fires(ctx)
		if err != nil {
			return err
		}
		mu.Lock()
		for k, f := range fs {
			seen[k] = f
		}
		mu.Unlock()
		return nil
	}
	if err := record(); err != nil {
		return nil, err
	}

	// Kill 100 ms before a whole second: the fire due then falls in the
	// time no node leads (unless the lock moves within 100 ms), so the
	// takeover has a fire to catch up.
	now := time.Now()
	d := now.Truncate(time.Second).Add(900 * time.Millisecond).Sub(now)
	if d < 0 {
		d += time.Second
	}
	time.Sleep(d)
	killed := time.Now()
	if err := leader.cmd.Process.Kill(); err != nil {
		return nil, err
	}
	leader.killed = true
	fo := &failover{killedNode: leader.i}
	var lockAt, fireAt, recoveredAt time.Time
	deadline := killed.Add(60 * time.Second)
	for {
		now := time.Now()
		if now.After(deadline) {
			break
		}
		if lockAt.IsZero() {
			if pid, err := c.leaderPID(ctx); err == nil && pid != oldPID {
				lockAt = now
			}
		}
		if err := record(); err != nil {
			return nil, err
		}
		if fireAt.IsZero() {
			mu.Lock()
			for _, f := range seen {
				if f.created.After(killed) && (fireAt.IsZero() || f.created.Before(fireAt)) {
					fireAt = f.created
				}
			}
			mu.Unlock()
		}
		if recoveredAt.IsZero() {
			var job struct {
				Status string `json:"status"`
			}
			if err := get(hc, survivor.base+"/api/jobs/"+strconv.FormatInt(id, 10), &job); err == nil && job.Status != "processing" {
				recoveredAt, fo.staleState = now, job.Status
			}
		}
		if !lockAt.IsZero() && !fireAt.IsZero() && !recoveredAt.IsZero() && now.Sub(fireAt) >= o.afterTakeoverWait {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if lockAt.IsZero() || fireAt.IsZero() || recoveredAt.IsZero() {
		return nil, fmt.Errorf("no takeover within 60 s: lock moved %t, periodic fired %t, stale job recovered %t",
			!lockAt.IsZero(), !fireAt.IsZero(), !recoveredAt.IsZero())
	}
	fo.lockMoved, fo.firstFire, fo.recovered = lockAt.Sub(killed), fireAt.Sub(killed), recoveredAt.Sub(killed)
	fo.afterLease = recoveredAt.Sub(expires)

	// Every whole second from the first fire to the last: one record with
	// its job; every job of the tick queue belongs to one record.
	var times []int64
	jobs := map[int64]int{}
	for k, f := range seen {
		times = append(times, k)
		if f.job == nil {
			fo.lost = append(fo.lost, f.at)
		} else {
			jobs[*f.job]++
		}
		if f.created.After(killed.Add(-2*time.Second)) && f.created.Before(fireAt.Add(time.Second)) {
			fo.maxLate = max(fo.maxLate, f.created.Sub(f.at))
		}
		if f.created.Sub(f.at) > time.Second {
			fo.lateFires++
		}
		if f.at.After(killed) && f.at.Before(fireAt) {
			fo.gapFires++
		}
	}
	slices.Sort(times)
	fo.fires = len(times)
	for i := 1; i < len(times); i++ {
		for t := times[i-1] + 1000; t < times[i]; t += 1000 {
			fo.lost = append(fo.lost, time.UnixMilli(t))
		}
		if (times[i]-times[0])%1000 != 0 {
			fo.doubled = append(fo.doubled, "fire off the whole second: "+time.UnixMilli(times[i]).UTC().Format(time.RFC3339Nano))
		}
	}
	for j, n := range jobs {
		if n > 1 {
			fo.doubled = append(fo.doubled, fmt.Sprintf("job %d recorded for %d fires", j, n))
		}
	}
	// A job of the entry without a fire record would be a second job for
	// some fire. One statement, one snapshot: the scheduler writes a fire's
	// record and its job in one transaction, and goes on firing meanwhile.
	var orphans int
	if err := c.db.QueryRow(ctx, `SELECT count(*) FROM jobs j WHERE j.queue = 'tick' AND NOT EXISTS
		(SELECT 1 FROM periodic_fires f WHERE f.entry = 'tick' AND f.job_id = j.id)`).Scan(&orphans); err != nil {
		return nil, err
	}
	if orphans > 0 {
		fo.doubled = append(fo.doubled, fmt.Sprintf("%d jobs in the tick queue without a fire record", orphans))
	}
	if len(fo.lost) > 0 || len(fo.doubled) > 0 {
		var s []string
		for _, t := range fo.lost {
			s = append(s, "lost "+t.UTC().Format(time.RFC3339Nano))
		}
		s = append(s, fo.doubled...)
		logf("periodic fires across the failover: %s", strings.Join(s, "; "))
	}
	return fo, nil
}
