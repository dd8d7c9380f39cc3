package remote

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"

	a2av1 "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"
	"golang.org/x/sync/singleflight"
)

// staleRetry is how soon a card whose refresh failed is read again (the
// stale card is used meanwhile).
const staleRetry = 10 * time.Second

// cards caches one peer's Agent Card: read when first needed, used for
// card_ttl, then read again with If-None-Match (a 304 keeps it). Concurrent
// readers share one request. A failed refresh keeps the stale card.
type cards struct {
	peer   *peerConfig
	client *http.Client
	log    *slog.Logger

	mu      sync.Mutex
	card    *a2av1.AgentCard
	etag    string
	checked time.Time // when the card was last confirmed
	fetches int       // requests sent (tests)

	flight singleflight.Group
}

// get returns the peer's card, reading it when missing or older than
// card_ttl. It fails only when there is no card at all.
func (c *cards) get(ctx context.Context) (*a2av1.AgentCard, error) {
	c.mu.Lock()
	card, fresh := c.card, time.Since(c.checked) < c.peer.CardTTL
	c.mu.Unlock()
	if card != nil && fresh {
		return card, nil
	}
	ch := c.flight.DoChan("card", func() (any, error) {
		// Shared by every waiter, so not bound to one caller's context.
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.peer.AttemptTimeout)
		defer cancel()
		return c.fetch(fctx)
	})
	select {
	case r := <-ch:
		if r.Err == nil {
			return r.Val.(*a2av1.AgentCard), nil
		}
		if card != nil {
			c.log.Warn("remote agent: card refresh failed; using the cached card", "agent", c.peer.ID, "err", r.Err)
			return card, nil
		}
		return nil, r.Err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// invalidate makes the next get read the card again (an interface moved,
// the peer refused what the card promised); the card stays usable.
func (c *cards) invalidate() {
	c.mu.Lock()
	c.checked = time.Time{}
	c.mu.Unlock()
}

// fetch reads the card. Failures are *failure values; after one, a cached
// card is used for up to staleRetry before the next read.
func (c *cards) fetch(ctx context.Context) (card *a2av1.AgentCard, err error) {
	defer func() {
		if err != nil {
			c.mu.Lock()
			if c.card != nil {
				c.checked = time.Now().Add(-c.peer.CardTTL + min(c.peer.CardTTL, staleRetry))
			}
			c.mu.Unlock()
		}
	}()
	id := c.peer.ID
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.peer.cardURL(), nil)
	if err != nil {
		return nil, fail(unusable, unavailable(id, "card URL: %v", err))
	}
	req.Header.Set("Accept", "application/json")
	c.mu.Lock()
	if c.card != nil && c.etag != "" {
		req.Header.Set("If-None-Match", c.etag)
	}
	c.fetches++
	c.mu.Unlock()
	resp, err := c.client.Do(req)
	if err != nil {
		return nil, cardFailure(ctx, id, err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotModified:
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.card == nil {
			return nil, invalidAnswer(id, "card answered 304 Not Modified to a request without If-None-Match")
		}
		c.checked = time.Now()
		return c.card, nil
	case resp.StatusCode != http.StatusOK:
		return nil, statusFailure(id, resp.StatusCode)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, cardFailure(ctx, id, err)
	}
	card, err = parseCard(body)
	if err != nil {
		return nil, invalidAnswer(id, "its card is not an A2A Agent Card: %v", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.card, c.etag, c.checked = card, resp.Header.Get("ETag"), time.Now()
	c.log.Info("remote agent: card read", "agent", id, "name", card.Name, "interfaces", len(card.SupportedInterfaces), "etag", c.etag != "")
	return card, nil
}

// cardFailure classifies a failed card read: running out of time is
// transient, like any network failure.
func cardFailure(ctx context.Context, id string, err error) *failure {
	if ctx.Err() != nil {
		return fail(transient, unavailable(id, "its card did not arrive within attempt_timeout"))
	}
	return transportFailure(id, err)
}

// parseCard reads a v1.0 card, a v0.3 card or the union of both. The
// security requirements are dropped first: a2a-go v2.3.1 reads their scope
// lists as bare arrays and fails on the schema's {"list": …} form (README
// "A2A"); requirements are not needed to call, the schemes are.
func parseCard(body []byte) (*a2av1.AgentCard, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		return nil, err
	}
	delete(top, "securityRequirements")
	b, err := json.Marshal(top)
	if err != nil {
		return nil, fmt.Errorf("re-encode: %w", err)
	}
	return a2av0.NewAgentCardParser()(b)
}
