"""Small leaf utilities: no envdoctor module below them, any module may import them."""
