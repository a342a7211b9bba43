-- fade picks the oldest eligible facts batch by batch. The index on
-- (trust, recorded_at) cannot give them in recorded_at order across two trust
-- values, so every batch sorted all eligible facts (39 MB spilled to disk at a
-- million); this one gives them in order (1,409 ms → 49 ms per batch there).
create index facts_fade_order_idx on facts (recorded_at) where trust in ('active', 'candidate');
