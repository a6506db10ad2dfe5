-- users found by their e-mail address in any ASCII case through an index
-- UsersRepository.getByEmail matches lower(email) = lower(?) on both engines; the NOCASE unique constraint on
-- the column cannot answer that expression, so a sign-in or invitation lookup scanned the whole table.
CREATE INDEX users_email_folded ON users (lower(email));
