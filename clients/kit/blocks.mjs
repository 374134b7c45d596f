// blocks.mjs runs what an explorer or an indexer built on @solana/kit
// does against a running tpu (`tpu run --no-gen`): it makes a block with
// a System transfer and a lookup table (the official program clients),
// reads it back with getBlock in every transactionDetails and encoding,
// lists blocks, and follows logs and a program over the websocket. It
// prints one line per check, "ok   <name>  <what it saw>" or
// "FAIL <name>  <why>", then "PASS: N checks", and exits 0 only if every
// check passed.
//
//   RPC_URL=http://127.0.0.1:8899 WS_URL=ws://127.0.0.1:8900 node blocks.mjs
//
// Each check gets STEP_TIMEOUT_MS (30 s), the whole run DEADLINE_MS
// (180 s). cmd/tpu TestKitClient runs this script against a tpu it starts.

import assert from 'node:assert/strict';
import {
  address,
  airdropFactory,
  appendTransactionMessageInstructions,
  createSolanaRpc,
  createSolanaRpcSubscriptions,
  createTransactionMessage,
  generateKeyPairSigner,
  getSignatureFromTransaction,
  lamports,
  pipe,
  sendAndConfirmTransactionFactory,
  setTransactionMessageFeePayerSigner,
  setTransactionMessageLifetimeUsingBlockhash,
  signTransactionMessageWithSigners,
} from '@solana/kit';
import { getTransferSolInstruction } from '@solana-program/system';
import {
  ADDRESS_LOOKUP_TABLE_PROGRAM_ADDRESS,
  getCreateLookupTableInstructionAsync,
  getExtendLookupTableInstruction,
} from '@solana-program/address-lookup-table';

const RPC_URL = process.env.RPC_URL || 'http://127.0.0.1:8899';
const WS_URL = process.env.WS_URL || 'ws://127.0.0.1:8900';
const STEP_MS = Number(process.env.STEP_TIMEOUT_MS || 30_000);
const DEADLINE_MS = Number(process.env.DEADLINE_MS || 180_000);
const SYSTEM = '11111111111111111111111111111111';

const rpc = createSolanaRpc(RPC_URL);
const subs = createSolanaRpcSubscriptions(WS_URL);
const sendAndConfirm = sendAndConfirmTransactionFactory({ rpc, rpcSubscriptions: subs });
const abort = new AbortController();

function within(ms, what, p) {
  let timer;
  const t = new Promise((_, rej) => {
    timer = setTimeout(() => rej(new Error(`${what}: no answer within ${ms} ms`)), ms);
  });
  return Promise.race([p, t]).finally(() => clearTimeout(timer));
}

// send signs instructions with payer as fee payer and confirms them.
async function send(payer, instructions) {
  const { value: bh } = await rpc.getLatestBlockhash({ commitment: 'confirmed' }).send();
  const msg = pipe(
    createTransactionMessage({ version: 0 }),
    (m) => setTransactionMessageFeePayerSigner(payer, m),
    (m) => setTransactionMessageLifetimeUsingBlockhash(bh, m),
    (m) => appendTransactionMessageInstructions(instructions, m),
  );
  const tx = await signTransactionMessageWithSigners(msg);
  await sendAndConfirm(tx, { commitment: 'confirmed' });
  return getSignatureFromTransaction(tx);
}

// first resolves with the first notification of a subscription that
// pred takes.
async function first(notifications, pred) {
  for await (const n of notifications) {
    if (pred(n)) return n;
  }
  throw new Error('subscription ended');
}

// The state the checks share: made by the first.
const s = {};

const CHECKS = [
  ['setup', async () => {
    s.payer = await generateKeyPairSigner();
    s.to = await generateKeyPairSigner();
    await airdropFactory({ rpc, rpcSubscriptions: subs })({
      recipientAddress: s.payer.address, lamports: lamports(2_000_000_000n), commitment: 'confirmed',
    });
    // Subscriptions first, so that they see what follows.
    // kit hands a notification only to iterators already waiting: start
    // reading at once.
    const logs = await subs.logsNotifications({ mentions: [s.to.address] }, { commitment: 'confirmed' })
      .subscribe({ abortSignal: abort.signal });
    s.logsSeen = first(logs, () => true); // only the transfer mentions s.to
    const programs = await subs.programNotifications(ADDRESS_LOOKUP_TABLE_PROGRAM_ADDRESS, { commitment: 'confirmed', encoding: 'jsonParsed' })
      .subscribe({ abortSignal: abort.signal });
    s.programSeen = first(programs, (x) => x.value.pubkey === s.table && x.value.account.data.parsed?.info?.addresses?.length === 2);
    s.logsSeen.catch(() => {});
    s.programSeen.catch(() => {});
    s.transfer = await send(s.payer, [getTransferSolInstruction({ source: s.payer, destination: s.to.address, amount: 1_000_000n })]);
    const recentSlot = await rpc.getSlot({ commitment: 'finalized' }).send();
    const create = await getCreateLookupTableInstructionAsync({ authority: s.payer.address, payer: s.payer, recentSlot });
    s.table = create.accounts[0].address;
    s.create = await send(s.payer, [create]);
    s.extend = await send(s.payer, [getExtendLookupTableInstruction({
      address: s.table, authority: s.payer, payer: s.payer, addresses: [s.to.address, address(SYSTEM)],
    })]);
    return `transfer ${s.transfer}, lookup table ${s.table} made and extended`;
  }],
  ['getBlock', async () => {
    const tx = await rpc.getTransaction(s.transfer, { commitment: 'confirmed', maxSupportedTransactionVersion: 0 }).send();
    s.slot = tx.slot;
    const block = await rpc.getBlock(s.slot, { commitment: 'confirmed', maxSupportedTransactionVersion: 0 }).send();
    assert.equal(block.parentSlot, s.slot - 1n);
    assert.equal(block.blockHeight, s.slot);
    assert.equal(typeof block.blockTime, 'bigint');
    const i = block.transactions.findIndex((t) => t.transaction.signatures[0] === s.transfer);
    assert.ok(i >= 0, 'the transfer is in its block');
    const t = block.transactions[i];
    assert.equal(t.version, 0);
    assert.equal(t.meta.err, null);
    assert.deepEqual(t.meta, tx.meta, 'the block holds the meta getTransaction gives');
    const parent = await rpc.getBlock(s.slot - 1n, { commitment: 'confirmed', transactionDetails: 'none', rewards: false }).send();
    assert.equal(block.previousBlockhash, parent.blockhash);
    assert.equal(parent.transactions, undefined);
    return `slot ${s.slot}: ${block.transactions.length} transaction(s), the transfer at ${i}, rewards ${JSON.stringify(block.rewards, (k, v) => typeof v === 'bigint' ? v.toString() : v)}`;
  }],
  ['getBlock details', async () => {
    const sigs = await rpc.getBlock(s.slot, { commitment: 'confirmed', transactionDetails: 'signatures' }).send();
    assert.ok(sigs.signatures.includes(s.transfer));
    const accts = await rpc.getBlock(s.slot, { commitment: 'confirmed', transactionDetails: 'accounts', maxSupportedTransactionVersion: 0 }).send();
    const t = accts.transactions.find((x) => x.transaction.signatures[0] === s.transfer);
    const keys = t.transaction.accountKeys.map((k) => `${k.pubkey}:${k.writable ? 'w' : 'r'}${k.signer ? 's' : ''}:${k.source}`);
    assert.deepEqual(keys, [`${s.payer.address}:ws:transaction`, `${s.to.address}:w:transaction`, `${SYSTEM}:r:transaction`]);
    assert.equal(t.meta.logMessages, undefined, 'accounts has no logs');
    const b64 = await rpc.getBlock(s.slot, { commitment: 'confirmed', encoding: 'base64', maxSupportedTransactionVersion: 0 }).send();
    assert.ok(b64.transactions.every((x) => x.transaction[1] === 'base64'));
    return `signatures ${sigs.signatures.length}, accounts ${keys.join(' ')}, base64`;
  }],
  ['getBlock jsonParsed', async () => {
    const tx = await rpc.getTransaction(s.create, { commitment: 'confirmed', maxSupportedTransactionVersion: 0 }).send();
    const block = await rpc.getBlock(tx.slot, { commitment: 'confirmed', encoding: 'jsonParsed', maxSupportedTransactionVersion: 0 }).send();
    const t = block.transactions.find((x) => x.transaction.signatures[0] === s.create);
    const ix = t.transaction.message.instructions[0];
    assert.equal(ix.program, 'address-lookup-table');
    assert.equal(ix.parsed.type, 'createLookupTable');
    assert.equal(ix.parsed.info.lookupTableAccount, s.table);
    assert.equal(ix.parsed.info.payerAccount, s.payer.address);
    const tr = await rpc.getTransaction(s.transfer, { commitment: 'confirmed', encoding: 'jsonParsed', maxSupportedTransactionVersion: 0 }).send();
    const p = tr.transaction.message.instructions[0];
    assert.equal(p.parsed.type, 'transfer');
    assert.equal(p.parsed.info.lamports, 1_000_000n);
    return `createLookupTable ${JSON.stringify(ix.parsed.info, (k, v) => typeof v === 'bigint' ? v.toString() : v)}; transfer parsed`;
  }],
  ['lookup table account', async () => {
    const { value } = await rpc.getAccountInfo(s.table, { commitment: 'confirmed', encoding: 'jsonParsed' }).send();
    assert.equal(value.data.program, 'address-lookup-table');
    assert.equal(value.data.parsed.type, 'lookupTable');
    assert.deepEqual(value.data.parsed.info.addresses, [s.to.address, SYSTEM]);
    assert.equal(value.data.parsed.info.authority, s.payer.address);
    return `lookupTable with ${value.data.parsed.info.addresses.length} addresses, deactivationSlot ${value.data.parsed.info.deactivationSlot}`;
  }],
  ['getBlocks', async () => {
    const blocks = await rpc.getBlocks(s.slot - 2n, s.slot, { commitment: 'confirmed' }).send();
    assert.deepEqual(blocks, [s.slot - 2n, s.slot - 1n, s.slot]);
    const limited = await rpc.getBlocksWithLimit(s.slot, 2, { commitment: 'confirmed' }).send();
    assert.deepEqual(limited, [s.slot, s.slot + 1n]);
    const time = await rpc.getBlockTime(s.slot).send();
    const block = await rpc.getBlock(s.slot, { commitment: 'confirmed', transactionDetails: 'none' }).send();
    assert.equal(time, block.blockTime);
    return `[${blocks.join(',')}], with limit [${limited.join(',')}], time ${time}`;
  }],
  ['logsNotifications', async () => {
    const n = await s.logsSeen;
    assert.equal(n.value.signature, s.transfer);
    assert.equal(n.value.err, null);
    assert.deepEqual(n.value.logs, [`Program ${SYSTEM} invoke [1]`, `Program ${SYSTEM} success`]);
    return `slot ${n.context.slot}: ${n.value.logs.join(' | ')}`;
  }],
  ['programNotifications', async () => {
    const n = await s.programSeen;
    assert.equal(n.value.account.data.parsed.type, 'lookupTable');
    return `${n.value.pubkey} at slot ${n.context.slot}, ${n.value.account.data.parsed.info.addresses.length} addresses`;
  }],
];

const deadline = setTimeout(() => {
  console.log(`FAIL deadline  the run overran ${DEADLINE_MS} ms`);
  process.exit(2);
}, DEADLINE_MS);

let failed = 0;
for (const [name, fn] of CHECKS) {
  try {
    const saw = await within(STEP_MS, name, fn());
    console.log(`ok   ${name}  ${saw}`);
  } catch (e) {
    failed++;
    console.log(`FAIL ${name}  ${e && e.stack ? e.stack : e}`);
    if (name === 'setup') break;
  }
}
abort.abort();
clearTimeout(deadline);
if (failed) {
  process.exit(1);
}
console.log(`PASS: ${CHECKS.length} checks`);
process.exit(0);
