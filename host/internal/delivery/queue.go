package delivery

import (
	"container/heap"
	"container/list"
	"strconv"
	"time"
)

// queues is the Service's state, guarded by Service.mu.
//
// A delivery (item) sits in its lane (the deliveries of one key and lane,
// in submit order); only a lane's head may run. A lane whose head may run is
// in its key's ready list; keys with ready lanes take turns (ring), and a
// key at its concurrency share, or a head whose destination is at its share,
// is passed over. A head waiting for its retry is in the timer heap and in
// no ready list.
type queues struct {
	keys     map[string]*key
	lanes    map[string]*lane
	dests    map[string]*dest
	ring     []*key // keys with ready lanes, in turn order
	turn     int
	retries  retryHeap
	pending  int // items on the host
	kinds    map[string]int
	inflight int
	seq      uint64                // names lanes of requests with Lane ""
	drops    map[string]*dropCount // by key: the log's burst counts (keys are configured owners: bounded)
	stopped  bool
}

type key struct {
	name      string
	pending   int
	inflight  int
	ready     []*lane
	inRing    bool
	droppable *list.List // *item not running and not Durable, oldest first
}

// dropCount is a key's drops since its last log line.
type dropCount struct {
	count  int
	kind   string
	limit  string
	logged time.Time
}

type lane struct {
	id    string
	key   *key
	items []*item // FIFO; items[0] is the head
	busy  bool    // the head is running or waiting for its retry
}

type dest struct {
	inflight int
	refs     int // items going there
}

type item struct {
	req      *Request
	lane     *lane
	dest     *dest
	destName string
	attempts int
	text     string        // the last failure
	elem     *list.Element // in key.droppable while not running
	due      time.Time     // next attempt, while in retries
	index    int           // in retries; -1 when not
}

func (q *queues) init() {
	q.keys, q.lanes, q.dests, q.kinds = map[string]*key{}, map[string]*lane{}, map[string]*dest{}, map[string]int{}
	if q.drops == nil {
		q.drops = map[string]*dropCount{}
	}
}

func (q *queues) pendingOf(name string) int {
	if k := q.keys[name]; k != nil {
		return k.pending
	}
	return 0
}

// add queues a new item for r at destination dn.
func (q *queues) add(r *Request, dn string) {
	k := q.keys[r.Key]
	if k == nil {
		k = &key{name: r.Key, droppable: list.New()}
		q.keys[r.Key] = k
	}
	laneID := r.Key + "\x00" + r.Lane
	if r.Lane == "" {
		q.seq++
		laneID = r.Key + "\x01" + strconv.FormatUint(q.seq, 10)
	}
	l := q.lanes[laneID]
	if l == nil {
		l = &lane{id: laneID, key: k}
		q.lanes[laneID] = l
	}
	d := q.dests[dn]
	if d == nil {
		d = &dest{}
		q.dests[dn] = d
	}
	d.refs++
	it := &item{req: r, lane: l, dest: d, destName: dn, index: -1}
	if !r.Durable {
		it.elem = k.droppable.PushBack(it)
	}
	l.items = append(l.items, it)
	k.pending++
	q.pending++
	q.kinds[r.Kind]++
	if len(l.items) == 1 {
		q.makeReady(l)
	}
}

// makeReady puts l, whose head may run, in its key's ready list.
func (q *queues) makeReady(l *lane) {
	k := l.key
	k.ready = append(k.ready, l)
	if !k.inRing {
		k.inRing = true
		q.ring = append(q.ring, k)
	}
}

// next takes the head of a ready lane whose key and destination have room
// and marks it running; nil when none may run.
func (q *queues) next(perKey, perDest int) *item {
	for range len(q.ring) {
		if q.turn >= len(q.ring) {
			q.turn = 0
		}
		k := q.ring[q.turn]
		if len(k.ready) == 0 {
			k.inRing = false
			q.ring = append(q.ring[:q.turn], q.ring[q.turn+1:]...)
			q.forget(k)
			continue
		}
		q.turn++
		if k.inflight >= perKey {
			continue
		}
		for i, l := range k.ready {
			it := l.items[0]
			if it.dest.inflight >= perDest {
				continue
			}
			k.ready = append(k.ready[:i], k.ready[i+1:]...)
			l.busy = true
			if it.elem != nil {
				k.droppable.Remove(it.elem)
				it.elem = nil
			}
			k.inflight++
			it.dest.inflight++
			q.inflight++
			return it
		}
	}
	return nil
}

// settle frees the running slots of it.
func (q *queues) settle(it *item) {
	it.lane.key.inflight--
	it.dest.inflight--
	q.inflight--
}

// requeue puts a running item back at the head of its lane (interrupted).
func (q *queues) requeue(it *item) {
	q.settle(it)
	q.waitAgain(it)
	it.lane.busy = false
	q.makeReady(it.lane)
}

// waitAgain makes a running item droppable again (as the key's oldest: it
// was submitted before whatever else waits).
func (q *queues) waitAgain(it *item) {
	if !it.req.Durable {
		it.elem = it.lane.key.droppable.PushFront(it)
	}
}

// retryLater schedules a running item's next attempt at due.
func (q *queues) retryLater(it *item, due time.Time) {
	q.settle(it)
	q.waitAgain(it)
	it.due = due
	heap.Push(&q.retries, it)
}

// releaseDue makes the heads whose retry is due runnable.
func (q *queues) releaseDue(now time.Time) {
	for len(q.retries) > 0 && !q.retries[0].due.After(now) {
		it := heap.Pop(&q.retries).(*item)
		it.lane.busy = false
		q.makeReady(it.lane)
	}
}

// nextDue is when the next retry is due (zero: none waits).
func (q *queues) nextDue() time.Time {
	if len(q.retries) == 0 {
		return time.Time{}
	}
	return q.retries[0].due
}

// remove takes a finished running item out.
func (q *queues) remove(it *item) {
	q.settle(it)
	it.lane.busy = false
	q.unlink(it)
}

// unlink takes it out of its lane and every count; the lane's next item
// becomes runnable when it was the head.
func (q *queues) unlink(it *item) {
	l, k := it.lane, it.lane.key
	if it.elem != nil {
		k.droppable.Remove(it.elem)
		it.elem = nil
	}
	if it.index >= 0 {
		heap.Remove(&q.retries, it.index)
	}
	head := l.items[0] == it
	for i, other := range l.items {
		if other == it {
			l.items = append(l.items[:i], l.items[i+1:]...)
			break
		}
	}
	if head && !l.busy {
		q.unready(l)
		l.busy = false
		if len(l.items) > 0 {
			q.makeReady(l)
		}
	}
	if len(l.items) == 0 {
		delete(q.lanes, l.id)
	}
	if it.dest.refs--; it.dest.refs == 0 && it.dest.inflight == 0 {
		delete(q.dests, it.destName)
	}
	k.pending--
	q.pending--
	if q.kinds[it.req.Kind]--; q.kinds[it.req.Kind] == 0 {
		delete(q.kinds, it.req.Kind)
	}
	q.forget(k)
}

// forget deletes an idle key that is in no turn (next drops it from the
// ring, then forgets it).
func (q *queues) forget(k *key) {
	if k.pending == 0 && k.inflight == 0 && !k.inRing && q.keys[k.name] == k {
		delete(q.keys, k.name)
	}
}

// unready takes l out of its key's ready list, if it is there.
func (q *queues) unready(l *lane) {
	k := l.key
	for i, r := range k.ready {
		if r == l {
			k.ready = append(k.ready[:i], k.ready[i+1:]...)
			return
		}
	}
}

// dropOldest removes and returns the oldest droppable item of the key of
// the given kind (nil: none waits).
func (q *queues) dropOldest(name, kind string) *item {
	k := q.keys[name]
	if k == nil {
		return nil
	}
	for e := k.droppable.Front(); e != nil; e = e.Next() {
		it := e.Value.(*item)
		if it.req.Kind != kind {
			continue
		}
		if it.index >= 0 { // waiting for its retry: the lane's head, not running
			it.lane.busy = false
		}
		q.unlink(it) // out of the heap too
		return it
	}
	return nil
}

// noteDrop counts a drop of the key's.
func (q *queues) noteDrop(name, kind, limit string) {
	d := q.drops[name]
	if d == nil {
		d = &dropCount{}
		q.drops[name] = d
	}
	d.count++
	d.kind, d.limit = kind, limit
}

// dropLine returns the key's drops to log when its last line is older than
// every (and resets the count).
func (q *queues) dropLine(name string, now time.Time, every time.Duration) (dropCount, bool) {
	d := q.drops[name]
	if d == nil || d.count == 0 || now.Sub(d.logged) < every {
		return dropCount{}, false
	}
	line := *d
	d.count, d.logged = 0, now
	return line, true
}

// drain removes and returns every item (the service stops).
func (q *queues) drain() []*item {
	var out []*item
	for _, l := range q.lanes {
		out = append(out, l.items...)
	}
	q.init()
	q.ring, q.retries, q.pending, q.inflight = nil, nil, 0, 0
	return out
}

// retryHeap orders items by due time.
type retryHeap []*item

func (h retryHeap) Len() int           { return len(h) }
func (h retryHeap) Less(i, j int) bool { return h[i].due.Before(h[j].due) }
func (h retryHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}

func (h *retryHeap) Push(x any) {
	it := x.(*item)
	it.index = len(*h)
	*h = append(*h, it)
}

func (h *retryHeap) Pop() any {
	old := *h
	it := old[len(old)-1]
	old[len(old)-1] = nil
	it.index = -1
	*h = old[:len(old)-1]
	return it
}
