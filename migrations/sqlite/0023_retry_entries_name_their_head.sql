-- A retry is answered with the first answer's receipt and writes nothing (docs/api.md,
-- "Retries"): each retry entry names the head of the batch that committed its evaluation
-- (receipt_heads' key), in the evaluation's transaction. The writer knows where the batch's head
-- will stand before it runs the batch, and tells the evaluation's job. The leaf is found among
-- the head's leaves by the answer's leaf hash, and its path made again from them. A head outlives
-- every entry that names it: an entry lives one consumption grace, a head the retention period,
-- which is never shorter (Settings).
-- head_instance, head_sequence: NULL in an entry stored before this migration; such an entry's
-- retry gets a receipt of its own, as before, until it expires (within one grace).
ALTER TABLE retry_entries ADD COLUMN head_instance TEXT;
ALTER TABLE retry_entries ADD COLUMN head_sequence INTEGER;
