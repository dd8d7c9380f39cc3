// Package delivery is the host's one outbound HTTP delivery service: A2A
// push notifications and plan webhooks are POSTed through it, to URLs a
// client chose, under http_fetch's dial guard (hostfn.NetPolicy.Client).
//
// Every delivery belongs to a key (the owner that asked for it) and goes to a
// destination (scheme, host and port of its URL). A Service bounds what one
// key or one destination can hold:
//
//   - concurrency: at most Config.PerDestination POSTs to one destination,
//     Config.PerKey POSTs of one key and Config.MaxConcurrent in all run at
//     once, so a receiver that accepts and never answers holds only its own
//     destination's slots (each for the request's Timeout), and one key's
//     slow receivers hold only that key's;
//   - retries are scheduled on a timer heap: a delivery waiting for its next
//     attempt holds no slot and no goroutine;
//   - memory: at most Config.MaxPending deliveries wait on the host,
//     Config.MaxPendingPerKey of one key, and Config.KindPending of one kind.
//     Past a cap the key that submits loses its own oldest waiting delivery
//     (never another key's); a Durable request (one whose caller keeps it,
//     such as a webhook job in JetStream) is refused instead, and the caller
//     tries again later. Drops are counted (Observer) and logged once per
//     burst and key.
//
// Requests with the same Key and Lane are attempted one at a time, in the
// order they were submitted (the updates of one push config of one task).
//
//	svc := delivery.New(delivery.Config{Client: netPolicy.Client()})
//	go svc.Run(ctx)
//	err := svc.Submit(&delivery.Request{Kind: "push", Key: owner, Lane: taskID, URL: u, Body: b,
//		Retry: delivery.Retry{Attempts: 5, Initial: 500 * time.Millisecond}})
//
// A Service is safe for concurrent use.
package delivery
