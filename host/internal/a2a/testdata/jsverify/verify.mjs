// verify.mjs CARD JWKS: runs @a2a-js/sdk's verifyAgentCardSignature on the
// card (JSON file) with keys from the JWKS (JSON file) and prints
// {"ok": bool, "error"?: string, "canonical": string} — the canonical form
// is the SDK's canonicalizeAgentCard, the bytes it checks the JWS over.
import { readFileSync } from 'node:fs';
import { canonicalizeAgentCard, verifyAgentCardSignature } from '@a2a-js/sdk';

const card = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const jwks = JSON.parse(readFileSync(process.argv[3], 'utf8'));
const verify = verifyAgentCardSignature(async (kid) => {
  const key = jwks.keys.find((k) => k.kid === kid);
  if (!key) throw new Error(`no key ${kid}`);
  return key;
});
console.debug = () => {}; // the SDK logs each failed signature entry
const out = { canonical: canonicalizeAgentCard(card) };
try {
  await verify(card);
  out.ok = true;
} catch (e) {
  out.ok = false;
  out.error = String(e && e.message ? e.message : e);
}
process.stdout.write(JSON.stringify(out));
