-- users found by their e-mail address in any ASCII case through an index
-- Postgres has had this index since its first migration (users_email_folded, unique, in 0001-identity.sql);
-- this twin keeps the two engines' migration versions in step.
SELECT 1;
