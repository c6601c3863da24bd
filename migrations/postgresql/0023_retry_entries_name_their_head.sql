-- A retry is answered with the first answer's receipt and writes nothing (docs/api.md,
-- "Retries"): each retry entry names the head of the batch that committed its evaluation
-- (receipt_heads' key), in the evaluation's transaction: the statement that stores the batch's
-- head, the last of the batch, sets it in the entries of the batch's evaluations. Any instance
-- answers a retry from the shared tables: the leaf is found among the head's leaves by the
-- answer's leaf hash, and its path made again from them. A head outlives every entry that names
-- it: an entry lives one consumption grace, a head the retention period, which is never shorter.
-- head_instance, head_sequence: NULL in an entry stored before this migration; such an entry's
-- retry gets a receipt of its own, as before, until it expires (within one grace).
ALTER TABLE retry_entries ADD COLUMN head_instance text;
ALTER TABLE retry_entries ADD COLUMN head_sequence bigint;
