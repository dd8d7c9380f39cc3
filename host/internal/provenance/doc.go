// Package provenance keeps signed, hash-chained records of what happened to
// an A2A task or a plan (spec 002): every state transition (from, to, time,
// by) and every artifact, each link signed by the host's keys and naming the
// hash of the link before it, so a chain read back later proves the order and
// content of every step and any edit names the link it breaks. A delegated
// call records the peer's signed result as a link of its own.
//
// Links are signed in memory and stored with the record they describe (a
// task's metadata under ExtURI, a plan record's provenance field) in the
// same write, so provenance adds no store round trip.
//
//	p := provenance.NewSigner(hostSigner, "skillhost")
//	err := p.Append(&chain, provenance.Link{Kind: provenance.KindTransition, Subject: "task:" + id, From: "", To: "TASK_STATE_SUBMITTED"})
//	rep := provenance.VerifyTask(taskJSON, keys) // rep.Err() names the failing link
package provenance
