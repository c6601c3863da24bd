-- Receipts (docs/api.md, "Receipts"): each instance's chain of signed tree heads, one head per
-- batch of evaluations its writer committed, inserted in that batch's transaction (a head is
-- durable exactly when its answers are).
-- jws: the head's compact JWS; its payload names the instance, the sequence, the tree's size
-- and root, the previous head's hash and the time.
-- leaves: the batch's leaf hashes, SHA-256(0x00 || answer body), 32 bytes each in leaf order;
-- they stay when an answer is erased, so that the root can still be checked (a leaf hash is
-- the hash of a body that holds no identifier: docs/privacy.md).
-- made_at: the head's time (Unix ms), by which retention deletes heads oldest first.
CREATE TABLE receipt_heads (
    instance text NOT NULL,
    sequence bigint NOT NULL,
    made_at bigint NOT NULL,
    jws text NOT NULL,
    leaves bytea NOT NULL,
    PRIMARY KEY (instance, sequence)
);
CREATE INDEX receipt_heads_by_time ON receipt_heads (made_at);
