// Package sqlq holds the SQL text both SQL stores build the same way, so
// that it is written once: how a listing is ordered and cut.
package sqlq

import (
	"cmp"
	"strconv"
	"strings"
)

// Page orders by cols, descending unless asc, and takes n rows (def if n
// is not positive).
func Page(asc bool, n, def int, cols ...string) string {
	dir := " DESC"
	if asc {
		dir = " ASC"
	}
	return " ORDER BY " + strings.Join(cols, dir+", ") + dir + " LIMIT " + strconv.Itoa(cmp.Or(max(n, 0), def))
}

// SetQueue sets cols of a row of queues (the name first, then cols, as
// arguments: $1.. with dollar, else ?), making the row if it is missing.
func SetQueue(dollar bool, cols ...string) string {
	ph, set := make([]string, len(cols)+1), make([]string, len(cols))
	for i := range ph {
		if ph[i] = "?"; dollar {
			ph[i] = "$" + strconv.Itoa(i+1)
		}
	}
	for i, c := range cols {
		set[i] = c + " = excluded." + c
	}
	return `INSERT INTO queues (name, ` + strings.Join(cols, ", ") + `) VALUES (` + strings.Join(ph, ", ") +
		`) ON CONFLICT (name) DO UPDATE SET ` + strings.Join(set, ", ")
}
