// The page of ccd web (placeholder).
"use strict";
