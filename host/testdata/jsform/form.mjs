// Drives plugins/form's form_fill over three turns with the official
// @a2a-js/sdk client (JSON-RPC and HTTP+JSON), the second turn streamed.
// Usage: node form.mjs BASE_URL. Prints one JSON line per binding.
import { ClientFactory, ClientFactoryOptions, JsonRpcTransportFactory, RestTransportFactory } from '@a2a-js/sdk/client';
import { randomUUID } from 'node:crypto';

const base = process.argv[2];
const text = (t) => ({ content: { $case: 'text', value: t }, metadata: undefined, filename: '', mediaType: '' });
const msg = (parts, extra = {}) => ({ messageId: randomUUID(), contextId: '', taskId: '', role: 1, parts,
  metadata: undefined, extensions: [], referenceTaskIds: [], ...extra });
const req = (message) => ({ tenant: '', message, configuration: undefined, metadata: undefined });
const taskOf = (r) => (r && r.payload && r.payload.$case === 'task' ? r.payload.value : r);
const question = (t) => t.status && t.status.message && t.status.message.parts[0].content.value;

for (const [name, factory] of [['JSONRPC', new JsonRpcTransportFactory()], ['HTTP+JSON', new RestTransportFactory()]]) {
  const client = await new ClientFactory({ transports: [factory], preferredTransports: [name] }).createFromUrl(base);
  const out = { binding: name, protocol: client.transport ? client.transport.protocolName : '' };
  let t = taskOf(await client.sendMessage(req(msg([{ content: { $case: 'data', value: { fields: ['name', 'email'] } },
    metadata: undefined, filename: '', mediaType: '' }], { metadata: { skillId: 'form_fill' } }))));
  out.turns = [[t.status.state, question(t)]];
  const states = [];
  let asked;
  for await (const ev of client.sendMessageStream(req(msg([text('Ada')], { taskId: t.id })))) {
    const p = ev.payload;
    if (p.$case === 'task') states.push(p.value.status.state);
    if (p.$case === 'statusUpdate') { states.push(p.value.status.state); asked = p.value.status.message && p.value.status.message.parts[0].content.value; }
  }
  out.turns.push([states, asked]);
  t = taskOf(await client.sendMessage(req(msg([text('ada@example.com')], { taskId: t.id }))));
  out.turns.push([t.status.state, t.artifacts[0].parts[0].content.value]);
  console.log(JSON.stringify(out));
}
