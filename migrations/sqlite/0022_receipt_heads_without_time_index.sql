-- The receipt heads lose their index on made_at (0018): each batch's commit wrote a page of it
-- (a frame of the write-ahead log, about one in sixteen of a commit's). The one writer stores
-- heads in time order (a chain's time never goes back), so the retention purge takes them
-- oldest first in rowid order and stops at the first that is not yet old (Retention.purgeBatch).
-- PostgreSQL keeps its index: its writers' heads interleave in the table.
DROP INDEX receipt_heads_by_time;
