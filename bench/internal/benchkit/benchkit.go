// Package benchkit holds what the bench programs (the comparison, nodes,
// bigdb) share: a plain net/http client of the queue's API, as a shell
// script or an app in another language would use it, and readings of a
// process's memory.
package benchkit

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

// HTTPClient keeps an idle connection for every producer and worker (Go's
// default keeps two per host, which would dial for most requests).
func HTTPClient() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns = 512
	tr.MaxIdleConnsPerHost = 512
	return &http.Client{Transport: tr, Timeout: 90 * time.Second}
}

// Post sends body as JSON to url and decodes a 2xx answer into out (nil:
// discard). A non-2xx answer is an error that quotes its start.
func Post(ctx context.Context, hc *http.Client, url string, body []byte, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("POST %s: %s: %s", url, resp.Status, bytes.TrimSpace(b))
	}
	if out != nil {
		err = json.NewDecoder(resp.Body).Decode(out)
	}
	// Read to the end (the newline after the JSON too): a body closed
	// early makes net/http drop the connection, and the next call dials.
	if _, cerr := io.Copy(io.Discard, resp.Body); err == nil {
		err = cerr
	}
	return err
}

// ProcStatus reads a "kB" field of /proc/PID/status (VmRSS, VmHWM) in
// bytes; 0 when it cannot.
func ProcStatus(pid int, field string) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			if f := strings.Fields(v); len(f) > 0 {
				n, _ := strconv.ParseInt(f[0], 10, 64)
				return n * 1024
			}
		}
	}
	return 0
}
