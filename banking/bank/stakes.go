package bank

import (
	"crypto/ed25519"
	"encoding/binary"
	"math"

	"github.com/tpugo/tpu/banking"
	"github.com/tpugo/tpu/txview"
)

// Genesis validators: identities staked at genesis the way a Solana
// cluster's bootstrap validators are, each with a vote account naming it
// as the node and a stake account delegated to that vote account. tpu
// runs neither the vote nor the stake program, so these accounts never
// change; what reads them is StakedNodes, which the QUIC TPU's
// stake-weighted QoS weighs its peers by.
//
// Keys derive from the genesis seed like the funded accounts':
//
//	validator i:     SHA-256("tpu-genesis-validator-v1" || Seed || uint64le(i))
//	its vote account:  SHA-256("tpu-genesis-vote-v1" || Seed || uint64le(i))
//	its stake account: SHA-256("tpu-genesis-stake-v1" || Seed || uint64le(i))

// The account layouts, as Agave's bincode writes them.
const (
	// StakeStateSize is StakeStateV2::size_of() (solana-stake-interface):
	// a stake account's data length.
	StakeStateSize = 200
	// VoteStateSize is VoteStateV3::size_of() (solana-vote-interface): a
	// vote account's data length.
	VoteStateSize = 3762
	// stakeStateStake is StakeStateV2::Stake's tag; after it, Meta (120
	// bytes: rent_exempt_reserve, authorized staker and withdrawer,
	// lockup), then Delegation: voter_pubkey, stake, activation_epoch,
	// deactivation_epoch, warmup_cooldown_rate (f64); then
	// credits_observed and StakeFlags.
	stakeStateStake = 2
	delegationAt    = 4 + 120
	// voteStateCurrent is VoteStateVersions::Current's tag (VoteStateV3);
	// every version's state begins with node_pubkey.
	voteStateCurrent = 2
	// bootstrapEpoch is the activation (and "never") epoch of a
	// bootstrap delegation: Agave's genesis stakes are activated at
	// Epoch::MAX, which counts as fully effective from the start.
	bootstrapEpoch = math.MaxUint64
	// defaultValidatorStake: 1,000 SOL each (GenesisConfig).
	defaultValidatorStake = 1_000_000_000_000
)

// MaxValidators bounds GenesisConfig.Validators.
const MaxValidators = 1 << 16

// ValidatorKey returns genesis validator i's identity key for a seed.
func ValidatorKey(seed string, i int) ed25519.PrivateKey {
	return derive("tpu-genesis-validator-v1", GenesisConfig{Seed: seed}.withDefaults().Seed, uint64(i), true)
}

// VoteAccount and StakeAccount return the addresses of genesis
// validator i's vote and stake accounts for a seed.
func VoteAccount(seed string, i int) banking.Pubkey {
	return txview.PublicKey(derive("tpu-genesis-vote-v1", GenesisConfig{Seed: seed}.withDefaults().Seed, uint64(i), true))
}

// StakeAccount: see VoteAccount.
func StakeAccount(seed string, i int) banking.Pubkey {
	return txview.PublicKey(derive("tpu-genesis-stake-v1", GenesisConfig{Seed: seed}.withDefaults().Seed, uint64(i), true))
}

// genesisValidators returns g's validators' vote and stake accounts.
func genesisValidators(g GenesisConfig) []*Account {
	var out []*Account
	for i := range g.Validators {
		id := txview.PublicKey(ValidatorKey(g.Seed, i))
		vote := VoteAccount(g.Seed, i)
		out = append(out,
			&Account{key: vote, Lamports: RentExemptMinimum(VoteStateSize), Owner: banking.VoteProgram, Data: voteState(id)},
			&Account{key: StakeAccount(g.Seed, i), Lamports: RentExemptMinimum(StakeStateSize) + g.ValidatorStake,
				Owner: banking.StakeProgram, Data: stakeState(id, vote, g.ValidatorStake)})
	}
	return out
}

// voteState returns a new vote account's data, as Agave's
// VoteStateV3::new writes it for node with node as its withdrawer and
// voter: no votes, no root, no credits, zero commission.
func voteState(node banking.Pubkey) []byte {
	b := make([]byte, 0, VoteStateSize)
	b = binary.LittleEndian.AppendUint32(b, voteStateCurrent)
	b = append(b, node[:]...)                  // node_pubkey
	b = append(b, node[:]...)                  // authorized_withdrawer
	b = append(b, 0)                           // commission
	b = binary.LittleEndian.AppendUint64(b, 0) // votes: none
	b = append(b, 0)                           // root_slot: None
	b = binary.LittleEndian.AppendUint64(b, 1) // authorized_voters: {epoch 0: node}
	b = binary.LittleEndian.AppendUint64(b, 0)
	b = append(b, node[:]...)
	b = append(b, make([]byte, 32*(32+8+8))...) // prior_voters' buffer
	b = binary.LittleEndian.AppendUint64(b, 31) // its idx (MAX_ITEMS - 1)
	b = append(b, 1)                            // is_empty
	b = binary.LittleEndian.AppendUint64(b, 0)  // epoch_credits: none
	// last_timestamp (slot, timestamp): zero, as the padding to size is.
	return b[:VoteStateSize]
}

// stakeState returns a bootstrap stake account's data: StakeStateV2::Stake
// delegating stake lamports to vote from genesis (activation epoch
// Epoch::MAX), with staker and withdrawer authority, no lockup.
func stakeState(authority, vote banking.Pubkey, stake uint64) []byte {
	b := make([]byte, 0, StakeStateSize)
	b = binary.LittleEndian.AppendUint32(b, stakeStateStake)
	b = binary.LittleEndian.AppendUint64(b, RentExemptMinimum(StakeStateSize)) // rent_exempt_reserve
	b = append(b, authority[:]...)                                             // staker
	b = append(b, authority[:]...)                                             // withdrawer
	b = append(b, make([]byte, 8+8+32)...)                                     // lockup: none
	b = append(b, vote[:]...)                                                  // delegation: voter_pubkey
	b = binary.LittleEndian.AppendUint64(b, stake)
	b = binary.LittleEndian.AppendUint64(b, bootstrapEpoch)         // activation_epoch
	b = binary.LittleEndian.AppendUint64(b, bootstrapEpoch)         // deactivation_epoch
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(0.25)) // warmup_cooldown_rate (deprecated)
	b = binary.LittleEndian.AppendUint64(b, 0)                      // credits_observed
	b = append(b, 0)                                                // StakeFlags
	return b[:StakeStateSize]
}

// delegation reads a stake account's delegation: ok is false unless a is
// owned by the stake program and in the Stake state, delegating a stake
// that is not deactivating.
func delegation(a *Account) (vote banking.Pubkey, stake uint64, ok bool) {
	d := a.Data
	if a.Owner != banking.StakeProgram || len(d) < delegationAt+32+24 || binary.LittleEndian.Uint32(d) != stakeStateStake {
		return vote, 0, false
	}
	copy(vote[:], d[delegationAt:])
	stake = binary.LittleEndian.Uint64(d[delegationAt+32:])
	deactivation := binary.LittleEndian.Uint64(d[delegationAt+48:])
	return vote, stake, deactivation == bootstrapEpoch
}

// nodeOf reads a vote account's node identity: ok is false unless a is
// owned by the vote program with a known state version (0 to 3, each of
// which begins with node_pubkey).
func nodeOf(a *Account) (node banking.Pubkey, ok bool) {
	if a == nil || a.Owner != banking.VoteProgram || len(a.Data) < 4+32 || binary.LittleEndian.Uint32(a.Data) > 3 {
		return node, false
	}
	copy(node[:], a.Data[4:])
	return node, true
}

// StakedNodes returns each node identity's stake: the stake of every
// delegation not deactivating, summed by the node its vote account
// names, as Agave's staked_nodes sums the epoch's vote accounts. tpu
// runs no stake program and no epochs, so every delegation counts in
// full, without warm-up or cool-down: in practice the genesis
// validators' (GenesisConfig.Validators). Call it while nothing
// executes (it reads every account).
func (b *Bank) StakedNodes() map[banking.Pubkey]uint64 {
	out := map[banking.Pubkey]uint64{}
	for _, a := range b.accounts {
		vote, stake, ok := delegation(a)
		if !ok || stake == 0 {
			continue
		}
		if node, ok := nodeOf(b.accounts[vote]); ok {
			out[node] += stake
		}
	}
	return out
}
