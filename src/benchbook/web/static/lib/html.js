// Preact with htm tagged templates: `html\`<p>${text}</p>\`` builds the virtual DOM, no build step.
import { h, render, Fragment, createContext, Component } from "preact";
import htm from "htm";

export const html = htm.bind(h);
export { h, render, Fragment, createContext, Component };
export { useState, useEffect, useMemo, useCallback, useRef, useContext, useReducer, useLayoutEffect } from "preact/hooks";
