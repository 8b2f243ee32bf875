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
