// Sends signed transfers to tpu's QUIC TPU over @matrixai/quic (quiche and
// BoringSSL: an independent QUIC and TLS stack), as a real sender does:
// finds the leader's tpuQuic through getSlotLeader and getClusterNodes,
// connects with ALPN solana-tpu presenting an ed25519 identity
// certificate, writes one transaction per unidirectional stream, then
// checks through JSON-RPC that every transfer landed and the balances
// are exact. Run by cmd/tpu TestQUICJSClient, which gives it:
//   TPU_RPC    the JSON-RPC URL
//   TPU_KEY    the identity's private key, PEM (PKCS#8)
//   TPU_CERT   its self-signed certificate, PEM
//   TPU_COUNT  transfers to send
// Each check prints "ok   <name>" or "FAIL <name>: why"; exit 1 on a failure.
'use strict';
const { webcrypto } = require('node:crypto');
const web3 = require('@solana/web3.js');

const rpcURL = process.env.TPU_RPC;
const count = Number(process.env.TPU_COUNT || '20');
const lamports = 1_000_000; // the first keeps the recipient rent-exempt

let failed = false;
function ok(name) { console.log(`ok   ${name}`); }
function fail(name, why) { console.log(`FAIL ${name}: ${why}`); failed = true; }

// base58 encodes bytes (Bitcoin's alphabet, as Solana's signatures).
function base58(bytes) {
  const alphabet = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';
  let n = 0n;
  for (const b of bytes) n = n * 256n + BigInt(b);
  let out = '';
  while (n > 0n) { out = alphabet[Number(n % 58n)] + out; n /= 58n; }
  for (const b of bytes) { if (b !== 0) break; out = '1' + out; }
  return out;
}

async function rpc(method, params = []) {
  const r = await fetch(rpcURL, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  const j = await r.json();
  if (j.error) throw new Error(`${method}: ${j.error.message}`);
  return j.result;
}

// confirmed polls getSignatureStatuses (no websocket) until every one of
// sigs is confirmed without error or ms pass, and returns how many are.
async function confirmed(sigs, ms) {
  const deadline = Date.now() + ms;
  let n = 0;
  while (Date.now() < deadline) {
    const st = await rpc('getSignatureStatuses', [sigs]);
    n = st.value.filter((v) => v && !v.err && (v.confirmationStatus === 'confirmed' || v.confirmationStatus === 'finalized')).length;
    if (n === sigs.length) break;
    await new Promise((r) => setTimeout(r, 200));
  }
  return n;
}

async function main() {
  const { QUICClient } = await import('@matrixai/quic'); // an ES module only
  const { default: Logger, LogLevel } = await import('@matrixai/logger');
  const quiet = new Logger('quic', LogLevel.WARN);
  const conn = new web3.Connection(rpcURL, 'confirmed');
  // Discovery: the leader's QUIC TPU.
  const leader = await rpc('getSlotLeader');
  const nodes = await rpc('getClusterNodes');
  const node = nodes.find((n) => n.pubkey === leader);
  if (!node || !node.tpuQuic) throw new Error(`no tpuQuic for leader ${leader}`);
  const [host, port] = [node.tpuQuic.slice(0, node.tpuQuic.lastIndexOf(':')), Number(node.tpuQuic.slice(node.tpuQuic.lastIndexOf(':') + 1))];
  ok('discovery');

  // A funded payer: an airdrop, confirmed.
  const payer = web3.Keypair.generate();
  const to = web3.Keypair.generate().publicKey;
  const air = await conn.requestAirdrop(payer.publicKey, web3.LAMPORTS_PER_SOL);
  if ((await confirmed([air], 30000)) !== 1) throw new Error('the airdrop was not confirmed');
  const before = await conn.getBalance(payer.publicKey, 'confirmed');

  const client = await QUICClient.createQUICClient({
    logger: quiet,
    host, port, localHost: '127.0.0.1',
    crypto: { ops: { randomBytes: async (data) => { webcrypto.getRandomValues(new Uint8Array(data)); } } },
    config: {
      key: process.env.TPU_KEY, cert: process.env.TPU_CERT,
      verifyPeer: false, applicationProtos: ['solana-tpu'],
      maxIdleTimeout: 30000,
    },
  });
  ok('handshake');

  const { blockhash } = await conn.getLatestBlockhash('confirmed');
  const sigs = [];
  for (let i = 0; i < count; i++) {
    const tx = new web3.Transaction({ feePayer: payer.publicKey, recentBlockhash: blockhash }).add(
      web3.SystemProgram.transfer({ fromPubkey: payer.publicKey, toPubkey: to, lamports: lamports + i }));
    tx.sign(payer);
    sigs.push(tx.signature);
    const stream = client.connection.newStream('uni');
    const w = stream.writable.getWriter();
    await w.write(new Uint8Array(tx.serialize()));
    await w.close();
  }
  ok('streams');

  // Every transfer lands.
  const n = await confirmed(sigs.map(base58), 30000);
  if (n === count) ok('landed'); else fail('landed', `${n} of ${count} confirmed`);

  let sum = 0;
  for (let i = 0; i < count; i++) sum += lamports + i;
  const got = await conn.getBalance(to, 'confirmed');
  const after = await conn.getBalance(payer.publicKey, 'confirmed');
  if (got === sum) ok('recipient balance'); else fail('recipient balance', `${got}, want ${sum}`);
  const fee = 5000 * count;
  if (before - after === sum + fee) ok('payer balance'); else fail('payer balance', `paid ${before - after}, want ${sum + fee}`);
  await client.destroy();
  console.log(`identity certificate sent ${count} transactions over QUIC to ${node.tpuQuic}`);
}

main().then(() => process.exit(failed ? 1 : 0), (e) => { console.log(`FAIL run: ${e.stack || e}`); process.exit(1); });
